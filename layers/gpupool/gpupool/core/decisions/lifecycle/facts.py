"""What every lifecycle stage reads: the policy, one invocation's indexes, and shared helpers.

Role: `LifecyclePolicy` (launch / registration timeouts, Failed-claim retention), `ClaimFacts`
(instances by id and by claim, nodes by the claim they were provisioned for, the nodes whose
GPUNode the node agent reports usable), `Step` (a stage's
answer: actions and the reason a human reads), `phase_since`, `age`, `fail_claim` (terminate a
live instance, mark the claim Failed, say why) and `phase_move_refusal` (phases move only
forward or to Failed, and Failed is final).

Must not: decide a stage (the stage modules do), perform I/O or read the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from gpupool.core.model.claim_state import claim_phase, node_claim
from gpupool.core.model.constants import EVENT_NODE_LAUNCH_FAILED
from gpupool.core.model.foreign import Node
from gpupool.core.model.instance import ManagedInstance
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import Action, RecordEvent, SetClaimPhase, TerminateInstance

__all__ = [
    "EVENT_NODE_LAUNCH_FAILED",
    "ClaimFacts",
    "LifecyclePolicy",
    "Step",
    "age",
    "fail_claim",
    "phase_move_refusal",
    "phase_since",
]

_FORWARD = {"Pending": 0, "Creating": 1, "Bound": 2}

# A stage's answer for one claim: the actions, and the reason ("" when there is nothing to say).
Step = tuple[list[Action], str]


class LifecyclePolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    launch_timeout: timedelta = timedelta(minutes=5)
    registration_timeout: timedelta = timedelta(minutes=15)
    failed_claim_retention: timedelta = timedelta(minutes=10)


def phase_move_refusal(current: str, target: str) -> str | None:
    """Why a claim may not move from `current` to `target` (None: it may). Phases move only
    forward (Pending → Creating → Bound) or to Failed, and Failed is final — so a stale or
    repeated phase change, applied late, never moves a claim back."""
    if current == "Failed" or (target != "Failed" and _FORWARD[target] < _FORWARD[current]):
        return f"claim is {current}; not moving it to {target}"
    return None


def phase_since(claim: GPUNodeClaim) -> datetime | None:
    """When the claim entered its current phase (its phase condition), else when it was created."""
    phase = claim_phase(claim)
    if claim.status:
        for condition in claim.status.conditions:
            if condition.type == phase and condition.last_transition_time is not None:
                return condition.last_transition_time
    return claim.metadata.creation_timestamp


def age(claim: GPUNodeClaim, now: datetime) -> timedelta:
    created = claim.metadata.creation_timestamp
    return now - created if created else timedelta(0)


class ClaimFacts:
    """Indexes over one invocation's reads."""

    def __init__(
        self, nodes: Sequence[Node], instances: Sequence[ManagedInstance], gpu_nodes: Sequence[GPUNode]
    ) -> None:
        self.by_id = {i.instance_id: i for i in instances}
        self.live_by_claim: dict[str, ManagedInstance] = {}
        for inst in sorted(instances, key=lambda i: (i.launch_time is None, i.launch_time, i.instance_id)):
            if inst.claim_name and not inst.gone:
                self.live_by_claim.setdefault(inst.claim_name, inst)
        self.node_by_claim = {name: n for n in nodes if (name := node_claim(n))}
        # The node agent (gpupool's, or TensorFusion's own) says a node's GPUs are usable by
        # putting its GPUNode in phase Running; until then the node is no capacity.
        self.gpus_usable = {g.name for g in gpu_nodes if g.status is not None and g.status.phase == "Running"}

    def instance(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        known = claim.status.instance_id if claim.status else None
        if known and known in self.by_id:
            return self.by_id[known]
        return self.live_by_claim.get(claim.name)


def fail_claim(
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
