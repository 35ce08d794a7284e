"""plan_orphan_sweep: terminate tagged instances whose claim no longer exists.

Role: an instance tagged `tensor-fusion.ai/node-name=<claim>` for this cluster whose claim is
gone (or that names no claim) is an orphan once it is older than the grace period — the
grace covers the moment between recording a claim and listing it. Untagged instances are
never reported by the Compute port, and instances of another cluster are left alone here too.

`plan_orphan_nodes` labels nodes whose claim is gone `tensor-fusion.ai/orphan=true`.

Must not: perform I/O or read the clock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

from gpupool.core.model.claim_state import node_claim
from gpupool.core.model.constants import LABEL_ORPHAN
from gpupool.core.model.foreign import Node
from gpupool.core.model.instance import ManagedInstance
from gpupool.core.planning.plan import Action, LabelNode, Plan, TerminateInstance

__all__ = ["plan_orphan_nodes", "plan_orphan_sweep"]


def plan_orphan_sweep(
    instances: Sequence[ManagedInstance],
    claim_names: Collection[str],
    *,
    cluster: str,
    now: datetime,
    grace: timedelta,
) -> Plan:
    """TerminateInstance for each live orphan older than `grace`, in instance-id order."""
    actions: list[Action] = []
    reasons: list[str] = []
    for inst in sorted(instances, key=lambda i: i.instance_id):
        if inst.gone or inst.cluster != cluster or not inst.tags:
            continue
        if inst.claim_name and inst.claim_name in claim_names:
            continue
        if inst.launch_time is None or now - inst.launch_time < grace:
            reasons.append(f"instance {inst.instance_id} has no claim but is within the {grace} grace period")
            continue
        actions.append(
            TerminateInstance(claim=inst.claim_name, instance_id=inst.instance_id, reason="Orphaned")
        )
        reasons.append(
            f"instance {inst.instance_id} is tagged for missing claim {inst.claim_name}: terminate"
        )
    return Plan(actions=tuple(actions), reasons=tuple(reasons))


def plan_orphan_nodes(nodes: Sequence[Node], claim_names: Collection[str]) -> Plan:
    """Label `tensor-fusion.ai/orphan=true` on nodes whose node-provisioner claim is gone (as
    TensorFusion does), and clear it when the claim exists again. Nothing is deleted."""
    actions: list[Action] = []
    reasons: list[str] = []
    for node in sorted(nodes, key=lambda n: n.name):
        owner = node_claim(node)
        if owner is None:
            continue
        marked = node.metadata.labels.get(LABEL_ORPHAN) == "true"
        if owner not in claim_names and not marked:
            actions.append(LabelNode(node=node.name, claim=owner, labels={LABEL_ORPHAN: "true"}))
            reasons.append(f"node {node.name}: claim {owner} is gone: label it orphan")
        elif owner in claim_names and marked:
            actions.append(LabelNode(node=node.name, claim=owner, labels={LABEL_ORPHAN: None}))
            reasons.append(f"node {node.name}: claim {owner} exists: clear the orphan label")
    return Plan(actions=tuple(actions), reasons=tuple(reasons))
