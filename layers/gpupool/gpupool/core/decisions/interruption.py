"""plan_interruption: the cloud is taking an instance away — cordon, drain, mark, let launch replace it.

Role: for an interruption warning (spot interruption, rebalance recommendation, preemptible
interruption) or an unexpected stop/termination of a claim's instance: cordon the claim's node,
drain it through the eviction API, and mark the claim interrupted. A marked claim no longer
counts as pool capacity, so the next launch decision plans the replacement.

Must not: launch the replacement itself, perform I/O, or read the clock (`now` is passed in).
"""

from __future__ import annotations

from datetime import datetime

from gpupool.core.model.claim_state import claim_interrupted, claim_phase
from gpupool.core.model.constants import EVENT_NODE_INTERRUPTED, LABEL_MANAGED_BY
from gpupool.core.model.foreign import Node
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import Action, CordonNode, DrainNode, MarkClaimInterrupted, Plan, RecordEvent

__all__ = ["EVENT_NODE_INTERRUPTED", "plan_interruption"]


def plan_interruption(
    claim: GPUNodeClaim | None,
    node: Node | None,
    *,
    instance_id: str,
    reason: str,
    now: datetime,
) -> Plan:
    """Cordon and drain `node` (when it joined) and mark `claim` (when it is ours and live)."""
    if claim is None:
        return Plan(reasons=(f"instance {instance_id} ({reason}) belongs to no claim: nothing to do",))
    if claim.metadata.deletion_timestamp is not None:
        return Plan(reasons=(f"claim {claim.name} is already being deleted: nothing to do for {reason}",))
    if claim_phase(claim) == "Failed":
        return Plan(
            reasons=(f"claim {claim.name} already Failed (its instance is being terminated): {reason}",)
        )
    pool, name = claim.metadata.labels.get(LABEL_MANAGED_BY), claim.name
    actions: list[Action] = []
    if node is not None:
        if not node.spec.unschedulable:
            actions.append(CordonNode(pool=pool, claim=name, node=node.name, instance_id=instance_id))
        actions.append(DrainNode(pool=pool, claim=name, node=node.name, instance_id=instance_id))
    if not claim_interrupted(claim):
        node_name = node.name if node else None
        actions.append(
            MarkClaimInterrupted(
                pool=pool, claim=name, node=node_name, instance_id=instance_id, reason=reason, at=now
            )
        )
        actions.append(
            RecordEvent(
                pool=pool,
                claim=name,
                node=node_name,
                instance_id=instance_id,
                object_kind="GPUNodeClaim",
                object_name=name,
                event_type="Warning",
                reason=EVENT_NODE_INTERRUPTED,
                message=f"instance {instance_id}: {reason}; draining and replacing",
            )
        )
    where = f"node {node.name}" if node else "no node joined yet"
    return Plan(
        actions=tuple(actions),
        reasons=(
            f"claim {claim.name} ({where}): {reason} — cordon, drain, mark; launch plans the replacement",
        ),
    )
