"""How each kind of action is applied through the ports (used only by the executor).

Role: one `apply_*` function per claim / node action kind (pool actions: `appliers_pool`;
DrainNode: `drain`; which applies which: `dispatch`), each returning a short detail for the log or
raising `Skip` when the object as it is now makes the action moot (already done, already
gone, or a stale phase change), or a domain error from the ports. Writes re-read the object and
carry its resourceVersion; a Conflict re-reads and retries a few times. Which phase moves are
allowed is the core's policy (`claim_lifecycle.phase_move_refusal`).

Must not: decide what to do (decisions are in `gpupool.core.decisions`), log, or check dry-run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from gpupool.core.decisions.claim_lifecycle import phase_move_refusal
from gpupool.core.model.base import Condition
from gpupool.core.model.constants import FINALIZER
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.planning.plan import (
    CordonNode,
    CreateClaim,
    DeleteClaim,
    LabelNode,
    LaunchInstance,
    MarkClaimInterrupted,
    ReleaseClaim,
    SetClaimPhase,
    TerminateInstance,
)
from gpupool.core.planning.snapshot import (
    ANNOTATION_INTERRUPTED,
)
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists, Conflict, NotFound, PermanentError

__all__ = ["Skip", "condition", "retry_conflicts", "set_phase"]

_CONFLICT_RETRIES = 4
T = TypeVar("T")


class Skip(Exception):
    """The action no longer applies to the object as it is now (not an error)."""


def retry_conflicts(write: Callable[[], T]) -> T:
    for _ in range(_CONFLICT_RETRIES - 1):
        try:
            return write()
        except Conflict as conflict:
            if isinstance(conflict, AlreadyExists):
                raise
    return write()


def apply_create_claim(deps: Deps, action: CreateClaim) -> str:
    created = deps.cluster.create_claim(action.manifest)
    if created.status is None or created.status.phase != "Pending" or not created.status.conditions:
        status = GPUNodeClaimStatus(phase="Pending", conditions=[condition(deps, "Pending", "ClaimCreated")])
        deps.cluster.update_claim_status(
            created.name, status, resource_version=created.metadata.resource_version or ""
        )
    return "claim recorded"


def condition(deps: Deps, phase: str, reason: str, message: str = "") -> Condition:
    return Condition(
        type=phase,
        status="True",
        reason=reason,
        message=message or None,
        last_transition_time=deps.clock.now(),
    )


def apply_launch_instance(deps: Deps, action: LaunchInstance) -> str:
    cluster, compute = deps.cluster, deps.compute
    name = action.claim or ""
    claim = cluster.get_claim(name)
    status = claim.status or GPUNodeClaimStatus()
    if claim.metadata.deletion_timestamp is not None or status.phase != "Pending" or status.instance_id:
        raise Skip(f"claim is {status.phase} with instance {status.instance_id}; nothing to launch")
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
    set_phase(deps, name, "Creating", "InstanceLaunched", f"instance {instance_id} {how}", instance_id)
    return f"{how} {instance_id}"


def set_phase(
    deps: Deps, name: str, phase: str, reason: str, message: str, instance_id: str | None
) -> GPUNodeClaim:
    cluster = deps.cluster

    def write() -> GPUNodeClaim:
        claim = cluster.get_claim(name)
        current = claim.status or GPUNodeClaimStatus()
        if current.phase == phase and (instance_id is None or current.instance_id == instance_id):
            raise Skip(f"claim already {phase}")
        refusal = phase_move_refusal(current.phase, phase)
        if refusal is not None:
            raise Skip(refusal)
        conditions = [c for c in current.conditions if c.type != phase]
        conditions.append(condition(deps, phase, reason, message))
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

    return retry_conflicts(write)


def apply_set_claim_phase(deps: Deps, action: SetClaimPhase) -> str:
    set_phase(deps, action.claim or "", action.phase, action.reason, action.message, action.instance_id)
    return f"{action.phase} ({action.reason})"


def apply_delete_claim(deps: Deps, action: DeleteClaim) -> str:
    try:
        deps.cluster.delete_claim(action.claim or "")
    except NotFound as gone:
        raise Skip("claim already gone") from gone
    return "deletion requested"


def apply_release_claim(deps: Deps, action: ReleaseClaim) -> str:
    cluster = deps.cluster
    name = action.claim or ""

    def write() -> None:
        claim = cluster.get_claim(name)
        if FINALIZER not in claim.metadata.finalizers:
            raise Skip("finalizer already removed")
        finalizers = [f for f in claim.metadata.finalizers if f != FINALIZER]
        cluster.patch_claim_metadata(
            name, finalizers=finalizers, resource_version=claim.metadata.resource_version or ""
        )

    try:
        retry_conflicts(write)
    except NotFound as gone:
        raise Skip("claim already gone") from gone
    return "finalizer removed"


def apply_mark_interrupted(deps: Deps, action: MarkClaimInterrupted) -> str:
    cluster = deps.cluster
    name = action.claim or ""

    def write() -> None:
        claim = cluster.get_claim(name)
        value = f"{action.reason} {action.at.isoformat()}"
        cluster.patch_claim_metadata(
            name,
            annotations={ANNOTATION_INTERRUPTED: value},
            resource_version=claim.metadata.resource_version or "",
        )

    retry_conflicts(write)
    return f"marked {action.reason}"


def apply_terminate(deps: Deps, action: TerminateInstance) -> str:
    deps.compute.terminate(action.instance_id or "")
    return f"terminated ({action.reason})"


def apply_cordon(deps: Deps, action: CordonNode) -> str:
    deps.cluster.patch_node(action.node or "", unschedulable=True)
    return "cordoned"


def apply_label(deps: Deps, action: LabelNode) -> str:
    deps.cluster.patch_node(action.node or "", labels=action.labels)
    return "labelled"
