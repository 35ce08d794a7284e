"""plan_claim_lifecycle: move each GPUNodeClaim along Pending → Creating → Bound, or to Failed.

Role: from all claims, nodes and the managed instances the cloud reports, decide per claim:
adopt an instance found by tag (Pending → Creating), bind a claim whose node
(`tensor-fusion.ai/node-provisioner=<claim>`) joined and is Ready, fail claims past the launch
(5 min) or registration (15 min) timeout and terminate their instance, fail claims whose
instance is gone, cordon and drain the node of a deleting claim (the drain waits for its pods),
then terminate its instance and release its finalizer,
and delete Failed claims after a retention period. The gap left behind is refilled by the
next launch decision (Failed / deleting claims stop counting).

Must not: launch instances (only the launch decision does, under the pool's lease), perform
I/O, or read the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from gpupool.core.model.constants import EVENT_MANAGED_NODE_CREATED, LABEL_MANAGED_BY
from gpupool.core.model.foreign import Node
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import (
    Action,
    CordonNode,
    DeleteClaim,
    DrainNode,
    Plan,
    RecordEvent,
    ReleaseClaim,
    SetClaimPhase,
    TerminateInstance,
)
from gpupool.core.planning.snapshot import ManagedInstance, claim_phase, node_claim

__all__ = ["LifecyclePolicy", "phase_move_refusal", "phase_since", "plan_claim_lifecycle"]

_FORWARD = {"Pending": 0, "Creating": 1, "Bound": 2}


def phase_move_refusal(current: str, target: str) -> str | None:
    """Why a claim may not move from `current` to `target` (None: it may). Phases move only
    forward (Pending → Creating → Bound) or to Failed, and Failed is final — so a stale or
    repeated phase change, applied late, never moves a claim back."""
    if current == "Failed" or (target != "Failed" and _FORWARD[target] < _FORWARD[current]):
        return f"claim is {current}; not moving it to {target}"
    return None


EVENT_NODE_LAUNCH_FAILED = "NodeLaunchFailed"


class LifecyclePolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    launch_timeout: timedelta = timedelta(minutes=5)
    registration_timeout: timedelta = timedelta(minutes=15)
    failed_claim_retention: timedelta = timedelta(minutes=10)


def phase_since(claim: GPUNodeClaim) -> datetime | None:
    """When the claim entered its current phase (its phase condition), else when it was created."""
    phase = claim_phase(claim)
    if claim.status:
        for condition in claim.status.conditions:
            if condition.type == phase and condition.last_transition_time is not None:
                return condition.last_transition_time
    return claim.metadata.creation_timestamp


def _age(claim: GPUNodeClaim, now: datetime) -> timedelta:
    created = claim.metadata.creation_timestamp
    return now - created if created else timedelta(0)


class _Facts:
    """Indexes over one invocation's reads."""

    def __init__(self, nodes: Sequence[Node], instances: Sequence[ManagedInstance]) -> None:
        self.by_id = {i.instance_id: i for i in instances}
        self.live_by_claim: dict[str, ManagedInstance] = {}
        for inst in sorted(instances, key=lambda i: (i.launch_time is None, i.launch_time, i.instance_id)):
            if inst.claim_name and not inst.gone:
                self.live_by_claim.setdefault(inst.claim_name, inst)
        self.node_by_claim = {name: n for n in nodes if (name := node_claim(n))}

    def instance(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        known = claim.status.instance_id if claim.status else None
        if known and known in self.by_id:
            return self.by_id[known]
        return self.live_by_claim.get(claim.name)


def _fail(
    claim: GPUNodeClaim, pool: str | None, inst: ManagedInstance | None, reason: str, msg: str
) -> list[Action]:
    actions: list[Action] = []
    if inst is not None and not inst.gone:
        actions.append(
            TerminateInstance(pool=pool, claim=claim.name, instance_id=inst.instance_id, reason=reason)
        )
    actions.append(SetClaimPhase(pool=pool, claim=claim.name, phase="Failed", reason=reason, message=msg))
    actions.append(
        RecordEvent(
            pool=pool,
            claim=claim.name,
            object_kind="GPUNodeClaim",
            object_name=claim.name,
            event_type="Warning",
            reason=EVENT_NODE_LAUNCH_FAILED,
            message=msg,
        )
    )
    return actions


def _decide(
    claim: GPUNodeClaim, facts: _Facts, now: datetime, policy: LifecyclePolicy
) -> tuple[list[Action], str]:
    pool = claim.metadata.labels.get(LABEL_MANAGED_BY)
    inst = facts.instance(claim)
    live = inst is not None and not inst.gone
    phase = claim_phase(claim)
    name = claim.name
    if claim.metadata.deletion_timestamp is not None:
        if live and inst is not None:
            terminate = TerminateInstance(
                pool=pool, claim=name, instance_id=inst.instance_id, reason="ClaimDeleted"
            )
            joined = facts.node_by_claim.get(name)
            drain: list[Action] = []
            if joined is not None:  # its pods go first (the drain waits for them), then the instance
                if not joined.spec.unschedulable:
                    drain.append(CordonNode(pool=pool, claim=name, node=joined.name))
                drain.append(DrainNode(pool=pool, claim=name, node=joined.name))
            return [
                *drain,
                terminate,
                ReleaseClaim(pool=pool, claim=name),
            ], f"claim {name} deleted: {'drain its node, ' if drain else ''}terminate {inst.instance_id}"
        return [
            ReleaseClaim(pool=pool, claim=name)
        ], f"claim {name} deleted and has no live instance: release it"
    if phase == "Failed":
        if live and inst is not None:
            terminate = TerminateInstance(
                pool=pool, claim=name, instance_id=inst.instance_id, reason="ClaimFailed"
            )
            return [terminate], f"claim {name} Failed: terminate its instance {inst.instance_id}"
        since = phase_since(claim)
        if since is not None and now - since >= policy.failed_claim_retention:
            return [
                DeleteClaim(pool=pool, claim=name, reason="FailedClaimExpired")
            ], f"claim {name} Failed long enough: delete"
        return [], ""
    node = facts.node_by_claim.get(name)
    instance_id = inst.instance_id if inst else None
    if phase in ("Pending", "Creating") and node is not None and node.is_ready():
        bind = SetClaimPhase(
            pool=pool, claim=name, node=node.name, instance_id=instance_id, phase="Bound", reason="NodeReady"
        )
        event = RecordEvent(
            pool=pool,
            claim=name,
            node=node.name,
            object_kind="GPUNodeClaim",
            object_name=name,
            reason=EVENT_MANAGED_NODE_CREATED,
            message=f"node {node.name} joined and is ready",
        )
        return [bind, event], f"claim {name}: node {node.name} is ready: Bound"
    if inst is not None and inst.gone and phase != "Pending":
        msg = f"instance {inst.instance_id} is {inst.state}"
        return _fail(claim, pool, inst, "InstanceTerminated", msg), f"claim {name}: {msg}: Failed"
    age = _age(claim, now)
    if phase == "Pending":
        if age > policy.launch_timeout:
            msg = f"no instance running after the {policy.launch_timeout} launch timeout"
            return _fail(claim, pool, inst, "LaunchTimeout", msg), f"claim {name}: {msg}: Failed"
        if live and inst is not None:
            adopt = SetClaimPhase(
                pool=pool,
                claim=name,
                instance_id=inst.instance_id,
                phase="Creating",
                reason="InstanceAdopted",
            )
            return [adopt], f"claim {name}: instance {inst.instance_id} found by tag: Creating"
        return [], ""
    if phase == "Creating" and age > policy.registration_timeout:
        msg = f"no ready node after the {policy.registration_timeout} registration timeout"
        return _fail(claim, pool, inst, "RegistrationTimeout", msg), f"claim {name}: {msg}: Failed"
    return [], ""


def plan_claim_lifecycle(
    claims: Sequence[GPUNodeClaim],
    nodes: Sequence[Node],
    instances: Sequence[ManagedInstance],
    *,
    now: datetime,
    policy: LifecyclePolicy,
) -> Plan:
    """Lifecycle actions for every claim (see module docstring), in claim-name order."""
    facts = _Facts(nodes, instances)
    actions: list[Action] = []
    reasons: list[str] = []
    for claim in sorted(claims, key=lambda c: c.name):
        claim_actions, reason = _decide(claim, facts, now, policy)
        actions.extend(claim_actions)
        if reason:
            reasons.append(reason)
    return Plan(actions=tuple(actions), reasons=tuple(reasons))
