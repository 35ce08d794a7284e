"""The one executor: applies a Plan's actions through the ports, in order, and logs them.

Role: each action kind has one `_apply_*` function. Writes re-read the object first and
carry its resourceVersion (a Conflict re-reads and retries a few times); a claim-phase change
is applied only along Pending → Creating → Bound and any → Failed, so a stale decision never
moves a claim backwards. When an action fails with a domain error, later actions on the same
claim are skipped (no release before terminate). Logs the plan once and each action once as
structured JSON with the keys pool, claim, node, instance_id, action, event_id.
Dry-run: log the plan, call no port.

Must not: decide (no policy here — decisions are in `gpupool.core.decisions`) or import SDKs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from gpupool.core.model.base import Condition
from gpupool.core.model.constants import FINALIZER
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.plan import (
    Action,
    ApplyPool,
    CordonNode,
    CreateClaim,
    DeleteClaim,
    DrainNode,
    LabelNode,
    LaunchInstance,
    MarkClaimInterrupted,
    MarkOfferingUnavailable,
    PatchPoolStatus,
    Plan,
    RecordEvent,
    ReleaseClaim,
    SetClaimPhase,
    TerminateInstance,
)
from gpupool.core.snapshot import (
    ANNOTATION_INTERRUPTED,
    ANNOTATION_UNAVAILABLE_OFFERINGS,
    unavailable_offerings,
)
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists, Conflict, DomainError, NotFound, PermanentError, Throttled

__all__ = ["LOG_KEYS", "ActionResult", "Executor"]

LOG = logging.getLogger("gpupool.service")
LOG_KEYS = ("pool", "claim", "node", "instance_id", "action", "event_id")
_CONFLICT_RETRIES = 4
_FORWARD = {"Pending": 0, "Creating": 1, "Bound": 2}
T = TypeVar("T")


@dataclass(frozen=True)
class ActionResult:
    action: Action
    outcome: str  # "applied" | "skipped" | "failed" | "dry-run"
    detail: str = ""
    error: DomainError | None = None

    def record(self) -> dict[str, str]:
        row = self.action.log_keys()
        row["result"] = self.outcome
        if self.detail:
            row["detail"] = self.detail
        return row


class _Skip(Exception):
    """The action no longer applies to the object as it is now (not an error)."""


class Executor:
    def __init__(self, deps: Deps, *, event_id: str | None, dry_run: bool = False) -> None:
        self.deps = deps
        self.event_id = event_id
        self.dry_run = dry_run

    # ---- logging -------------------------------------------------------------------------
    def _log(self, message: str, keys: dict[str, str], level: int = logging.INFO, **extra: object) -> None:
        entry: dict[str, object] = {key: keys.get(key) for key in LOG_KEYS}
        entry["event_id"] = self.event_id
        entry["message"] = message
        entry.update(extra)
        LOG.log(level, json.dumps(entry, default=str, sort_keys=True))

    # ---- applying ------------------------------------------------------------------------
    def apply(self, plan: Plan) -> list[ActionResult]:
        """Apply `plan` in order; returns one result per action."""
        if plan.actions or plan.reasons:
            pools = sorted({a.pool for a in plan.actions if a.pool})
            self._log(
                "plan",
                {"pool": ",".join(pools)} if pools else {},
                actions=[a.model_dump(mode="json", exclude_none=True) for a in plan.actions],
                reasons=list(plan.reasons),
                dry_run=self.dry_run,
            )
        results: list[ActionResult] = []
        failed_claims: set[str] = set()
        for action in plan.actions:
            result = self._apply_one(action, failed_claims)
            if result.outcome == "failed" and action.claim:
                failed_claims.add(action.claim)
            level = logging.WARNING if result.outcome == "failed" else logging.INFO
            self._log(result.outcome, action.log_keys(), level, detail=result.detail)
            results.append(result)
        return results

    def _apply_one(self, action: Action, failed_claims: set[str]) -> ActionResult:
        if self.dry_run:
            return ActionResult(action, "dry-run")
        if action.claim and action.claim in failed_claims:
            return ActionResult(action, "skipped", "an earlier action on this claim failed")
        try:
            detail = _HANDLERS[type(action)](self, action)
        except _Skip as skip:
            return ActionResult(action, "skipped", str(skip))
        except DomainError as error:
            return ActionResult(action, "failed", f"{type(error).__name__}: {error.message}", error)
        return ActionResult(action, "applied", detail)

    def _retry_conflicts(self, write: Callable[[], T]) -> T:
        for _ in range(_CONFLICT_RETRIES - 1):
            try:
                return write()
            except Conflict as conflict:
                if isinstance(conflict, AlreadyExists):
                    raise
        return write()

    # ---- pools ---------------------------------------------------------------------------
    def _apply_pool(self, action: ApplyPool) -> str:
        cluster = self.deps.cluster
        if action.create:
            try:
                cluster.create_pool(action.desired)
            except AlreadyExists as exists:
                raise _Skip("pool already exists") from exists
            return "created"
        cluster.replace_pool_spec(
            action.desired, resource_version=action.desired.metadata.resource_version or ""
        )
        return "spec updated"

    def _mark_offering_unavailable(self, action: MarkOfferingUnavailable) -> str:
        cluster = self.deps.cluster
        pool_name = action.pool or ""

        def write() -> None:
            pool = cluster.get_pool(pool_name)
            memory = unavailable_offerings(pool, self.deps.clock.now())
            memory[action.offering_key] = max(action.until, memory.get(action.offering_key, action.until))
            text = json.dumps({k: v.isoformat() for k, v in sorted(memory.items())}, sort_keys=True)
            cluster.patch_pool_annotations(
                pool_name,
                {ANNOTATION_UNAVAILABLE_OFFERINGS: text},
                resource_version=pool.metadata.resource_version or "",
            )

        self._retry_conflicts(write)
        return f"{action.offering_key} unavailable until {action.until.isoformat()}"

    def _patch_pool_status(self, action: PatchPoolStatus) -> str:
        cluster = self.deps.cluster
        pool_name = action.pool or ""

        def write() -> None:
            pool = cluster.get_pool(pool_name)
            current = pool.status or GPUPoolStatus()
            changes = {f: getattr(action.status, f) for f in action.fields}
            cluster.update_pool_status(
                pool_name,
                current.model_copy(update=changes),
                resource_version=pool.metadata.resource_version or "",
            )

        self._retry_conflicts(write)
        return "status updated"

    # ---- claims --------------------------------------------------------------------------
    def _create_claim(self, action: CreateClaim) -> str:
        created = self.deps.cluster.create_claim(action.manifest)
        if created.status is None or created.status.phase != "Pending" or not created.status.conditions:
            status = GPUNodeClaimStatus(
                phase="Pending", conditions=[self._condition("Pending", "ClaimCreated")]
            )
            self.deps.cluster.update_claim_status(
                created.name, status, resource_version=created.metadata.resource_version or ""
            )
        return "claim recorded"

    def _condition(self, phase: str, reason: str, message: str = "") -> Condition:
        return Condition(
            type=phase,
            status="True",
            reason=reason,
            message=message or None,
            last_transition_time=self.deps.clock.now(),
        )

    def _launch_instance(self, action: LaunchInstance) -> str:
        cluster, compute = self.deps.cluster, self.deps.compute
        name = action.claim or ""
        claim = cluster.get_claim(name)
        status = claim.status or GPUNodeClaimStatus()
        if claim.metadata.deletion_timestamp is not None or status.phase != "Pending" or status.instance_id:
            raise _Skip(f"claim is {status.phase} with instance {status.instance_id}; nothing to launch")
        node_class = next((c for c in cluster.list_node_classes() if c.name == action.node_class), None)
        if node_class is None:
            raise PermanentError(f"GPUNodeClass {action.node_class} not found")
        found = compute.find_by_claim(name)
        if found is not None:
            instance_id, how = found.instance_id, "adopted"
        else:
            token = claim.metadata.uid or name
            instance_id, how = (
                compute.launch(claim, node_class, action.offering, client_token=token),
                "launched",
            )
        self._set_phase(name, "Creating", "InstanceLaunched", f"instance {instance_id} {how}", instance_id)
        return f"{how} {instance_id}"

    def _set_phase(
        self, name: str, phase: str, reason: str, message: str, instance_id: str | None
    ) -> GPUNodeClaim:
        cluster = self.deps.cluster

        def write() -> GPUNodeClaim:
            claim = cluster.get_claim(name)
            current = claim.status or GPUNodeClaimStatus()
            if current.phase == phase and (instance_id is None or current.instance_id == instance_id):
                raise _Skip(f"claim already {phase}")
            if current.phase == "Failed" or (phase != "Failed" and _FORWARD[phase] < _FORWARD[current.phase]):
                raise _Skip(f"claim is {current.phase}; not moving it to {phase}")
            conditions = [c for c in current.conditions if c.type != phase]
            conditions.append(self._condition(phase, reason, message))
            status = current.model_copy(
                update={
                    "phase": phase,
                    "reason": reason,
                    "message": message or None,
                    "instance_id": instance_id or current.instance_id,
                    "conditions": conditions,
                }
            )
            return cluster.update_claim_status(
                name, status, resource_version=claim.metadata.resource_version or ""
            )

        return self._retry_conflicts(write)

    def _set_claim_phase(self, action: SetClaimPhase) -> str:
        self._set_phase(action.claim or "", action.phase, action.reason, action.message, action.instance_id)
        return f"{action.phase} ({action.reason})"

    def _delete_claim(self, action: DeleteClaim) -> str:
        try:
            self.deps.cluster.delete_claim(action.claim or "")
        except NotFound as gone:
            raise _Skip("claim already gone") from gone
        return "deletion requested"

    def _release_claim(self, action: ReleaseClaim) -> str:
        cluster = self.deps.cluster
        name = action.claim or ""

        def write() -> None:
            claim = cluster.get_claim(name)
            if FINALIZER not in claim.metadata.finalizers:
                raise _Skip("finalizer already removed")
            finalizers = [f for f in claim.metadata.finalizers if f != FINALIZER]
            cluster.patch_claim_metadata(
                name, finalizers=finalizers, resource_version=claim.metadata.resource_version or ""
            )

        try:
            self._retry_conflicts(write)
        except NotFound as gone:
            raise _Skip("claim already gone") from gone
        return "finalizer removed"

    def _mark_interrupted(self, action: MarkClaimInterrupted) -> str:
        cluster = self.deps.cluster
        name = action.claim or ""

        def write() -> None:
            claim = cluster.get_claim(name)
            value = f"{action.reason} {action.at.isoformat()}"
            cluster.patch_claim_metadata(
                name,
                annotations={ANNOTATION_INTERRUPTED: value},
                resource_version=claim.metadata.resource_version or "",
            )

        self._retry_conflicts(write)
        return f"marked {action.reason}"

    # ---- instances, nodes, events --------------------------------------------------------
    def _terminate(self, action: TerminateInstance) -> str:
        self.deps.compute.terminate(action.instance_id or "")
        return f"terminated ({action.reason})"

    def _cordon(self, action: CordonNode) -> str:
        self.deps.cluster.patch_node(action.node or "", unschedulable=True)
        return "cordoned"

    def _label(self, action: LabelNode) -> str:
        self.deps.cluster.patch_node(action.node or "", labels=action.labels)
        return "labelled"

    def _drain(self, action: DrainNode) -> str:
        cluster = self.deps.cluster
        evicted, blocked = [], []
        for pod in cluster.list_pods(node_name=action.node):
            owners = {ref.kind for ref in pod.metadata.owner_references}
            mirror = "kubernetes.io/config.mirror" in pod.metadata.annotations
            finished = pod.status.phase in ("Succeeded", "Failed")
            if "DaemonSet" in owners or mirror or finished or pod.metadata.deletion_timestamp is not None:
                continue
            namespace, pod_name = pod.metadata.namespace or "default", pod.name
            try:
                cluster.evict_pod(namespace, pod_name)
                evicted.append(f"{namespace}/{pod_name}")
            except NotFound:
                continue
            except Throttled:
                blocked.append(f"{namespace}/{pod_name}")
        if blocked:
            raise Throttled(f"evicted {len(evicted)}; blocked by a disruption budget: {', '.join(blocked)}")
        return f"evicted {len(evicted)} pod(s)"

    def _event(self, action: RecordEvent) -> str:
        try:
            self.deps.cluster.record_event(
                kind=action.object_kind,
                name=action.object_name,
                namespace=action.namespace,
                event_type=action.event_type,
                reason=action.reason,
                message=action.message,
            )
        except DomainError as error:  # events are best effort: never fail the plan for one
            raise _Skip(f"event not recorded: {error.message}") from error
        return f"{action.event_type} {action.reason}"


_HANDLERS: dict[type, Callable[[Executor, Action], str]] = {
    ApplyPool: Executor._apply_pool,  # type: ignore[dict-item]
    CreateClaim: Executor._create_claim,  # type: ignore[dict-item]
    LaunchInstance: Executor._launch_instance,  # type: ignore[dict-item]
    SetClaimPhase: Executor._set_claim_phase,  # type: ignore[dict-item]
    TerminateInstance: Executor._terminate,  # type: ignore[dict-item]
    DeleteClaim: Executor._delete_claim,  # type: ignore[dict-item]
    ReleaseClaim: Executor._release_claim,  # type: ignore[dict-item]
    CordonNode: Executor._cordon,  # type: ignore[dict-item]
    DrainNode: Executor._drain,  # type: ignore[dict-item]
    LabelNode: Executor._label,  # type: ignore[dict-item]
    MarkClaimInterrupted: Executor._mark_interrupted,  # type: ignore[dict-item]
    MarkOfferingUnavailable: Executor._mark_offering_unavailable,  # type: ignore[dict-item]
    PatchPoolStatus: Executor._patch_pool_status,  # type: ignore[dict-item]
    RecordEvent: Executor._event,  # type: ignore[dict-item]
}
