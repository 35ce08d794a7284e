"""How `plan_launch` differs per provisioning mode: what class a pool launches with, and how.

Role: `launch_class(snapshot)` — the node class name a pool's claims record (Provisioned: the
GPUNodeClass, which must exist; Karpenter: `karpenterNodeClassRef.name`, whose existence the
applier checks against the cluster) or why there is none; `launch_claim` — the GPUNodeClaim as
the mode records it (Karpenter: `spec.nodeClassRef` is the Karpenter node class);
`launch_action` — `LaunchInstance` (Provisioned) or `LaunchNodeClaim` (Karpenter);
`plan_karpenter_unavailable` — a Karpenter claim whose NodeClaim failed before its node ever
joined (Karpenter deletes a NodeClaim it cannot launch, e.g. InsufficientCapacity) makes its
offering unavailable for a while, so the refill tries the next cheapest, as in Provisioned mode.

Must not: perform I/O, read the clock, or decide how many claims a gap needs (`plan_launch` does).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from gpupool.core.decisions.claim_lifecycle import phase_since
from gpupool.core.decisions.karpenter_nodeclaim import build_karpenter_nodeclaim
from gpupool.core.model.base import GroupKindName
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import (
    Action,
    LaunchInstance,
    LaunchNodeClaim,
    MarkOfferingUnavailable,
    OfferingRef,
    Plan,
)
from gpupool.core.planning.snapshot import PoolSnapshot, claim_phase, unavailable_offerings

__all__ = ["LAUNCHED_MODES", "launch_action", "launch_claim", "launch_class", "plan_karpenter_unavailable"]

# The provisioning modes whose gap the launch function closes (AutoSelect expands per pod).
LAUNCHED_MODES = ("Provisioned", "Karpenter")


def _mode(snapshot: PoolSnapshot) -> str:
    return snapshot.pool.spec.node_manager_config.provisioning_mode


def launch_class(snapshot: PoolSnapshot) -> tuple[str | None, str]:
    """(class name, "") when the pool can launch, else (None, the reason it cannot)."""
    provisioner = snapshot.pool.spec.node_manager_config.node_provisioner
    if _mode(snapshot) == "Karpenter":
        ref = provisioner.karpenter_node_class_ref if provisioner else None
        if ref is None:
            return None, "Karpenter mode needs nodeProvisioner.karpenterNodeClassRef"
        return ref.name, ""
    class_name = provisioner.node_class if provisioner else None
    if not class_name or snapshot.node_class is None:
        return None, f"GPUNodeClass {class_name or '(none set)'} not found"
    return class_name, ""


def launch_claim(snapshot: PoolSnapshot, claim: GPUNodeClaim) -> GPUNodeClaim:
    """`claim` as the pool's mode records it: Karpenter claims point at the Karpenter node class."""
    provisioner = snapshot.pool.spec.node_manager_config.node_provisioner
    ref = provisioner.karpenter_node_class_ref if provisioner else None
    if _mode(snapshot) != "Karpenter" or ref is None:
        return claim
    node_class_ref = GroupKindName(group=ref.group, kind=ref.kind, name=ref.name, version=ref.version)
    spec = claim.spec.model_copy(update={"node_class_ref": node_class_ref})
    return claim.model_copy(update={"spec": spec})


def launch_action(
    snapshot: PoolSnapshot, claim: GPUNodeClaim, offering: OfferingRef, class_name: str
) -> Action:
    """What makes `claim`'s node: an instance (Provisioned) or a Karpenter NodeClaim (Karpenter).
    Raises KarpenterModeError when the pool cannot build a NodeClaim."""
    if _mode(snapshot) != "Karpenter":
        return LaunchInstance(pool=snapshot.name, claim=claim.name, node_class=class_name, offering=offering)
    manifest = build_karpenter_nodeclaim(snapshot.pool, claim)
    return LaunchNodeClaim(pool=snapshot.name, claim=claim.name, manifest=manifest, offering=offering)


def plan_karpenter_unavailable(snapshot: PoolSnapshot, *, now: datetime, unavailable_for: timedelta) -> Plan:
    """Offerings of recently failed Karpenter claims (NodeClaim gone or Launched=False before the
    node joined) to remember as unavailable until `failed at + unavailable_for`."""
    if _mode(snapshot) != "Karpenter":
        return Plan()
    remembered = unavailable_offerings(snapshot.pool, now)
    marks: dict[str, datetime] = {}
    for claim in snapshot.claims:
        status = claim.status
        if status is None or claim_phase(claim) != "Failed" or status.reason != "InstanceTerminated":
            continue
        if any(c.type == "Bound" for c in status.conditions) or not claim.spec.instance_type:
            continue
        failed_at = phase_since(claim)
        if failed_at is None or failed_at + unavailable_for <= now:
            continue
        key = f"{claim.spec.instance_type}/{claim.spec.zone or '*'}/{claim.spec.capacity_type or 'OnDemand'}"
        until = failed_at + unavailable_for
        if remembered.get(key, now) < until and marks.get(key, now) < until:
            marks[key] = until
    actions = tuple(
        MarkOfferingUnavailable(pool=snapshot.name, offering_key=k, until=u) for k, u in sorted(marks.items())
    )
    reasons = tuple(
        f"pool {snapshot.name}: Karpenter could not launch {k}; skip it until {u.isoformat()}"
        for k, u in sorted(marks.items())
    )
    return Plan(actions=actions, reasons=reasons)
