"""Initialization: a claim whose node joined, is Ready and has usable GPUs becomes Bound.

Role: `initialize(claim, facts)` — for a Pending or Creating claim whose registered node is
Ready and whose GPUNode the node agent reports Running (its GPUs discovered and usable):
SetClaimPhase Bound (with the instance id when known) and a ManagedNodeCreated event.

Must not: perform I/O, read the clock, or bind a node that is not Ready or whose GPUs no agent
has reported usable.
"""

from __future__ import annotations

from gpupool.core.decisions.lifecycle.facts import ClaimFacts, Step
from gpupool.core.decisions.lifecycle.registration import registered_node
from gpupool.core.model.claim_state import claim_phase
from gpupool.core.model.constants import EVENT_MANAGED_NODE_CREATED, LABEL_MANAGED_BY
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import RecordEvent, SetClaimPhase

__all__ = ["initialize"]


def initialize(claim: GPUNodeClaim, facts: ClaimFacts) -> Step | None:
    node = registered_node(claim, facts)
    if claim_phase(claim) not in ("Pending", "Creating") or node is None or not node.is_ready():
        return None
    if node.name not in facts.gpus_usable:
        return None
    pool, name = claim.metadata.labels.get(LABEL_MANAGED_BY), claim.name
    inst = facts.instance(claim)
    bind = SetClaimPhase(
        pool=pool,
        claim=name,
        node=node.name,
        instance_id=inst.instance_id if inst else None,
        phase="Bound",
        reason="NodeReady",
    )
    event = RecordEvent(
        pool=pool,
        claim=name,
        node=node.name,
        object_kind="GPUNodeClaim",
        object_name=name,
        reason=EVENT_MANAGED_NODE_CREATED,
        message=f"node {node.name} joined, is ready and its GPUs are usable",
    )
    return [bind, event], f"claim {name}: node {node.name} is ready with usable GPUs: Bound"
