"""How `plan_launch` differs per provisioning mode: what class a pool launches with, and how.

Role: `launch_class(snapshot)` — the node class name a pool's claims record (Provisioned: the
GPUNodeClass, which must exist; Karpenter: `karpenterNodeClassRef.name`, whose existence the
applier checks against the cluster) or why there is none; `launch_claim` — the GPUNodeClaim as
the mode records it (Karpenter: `spec.nodeClassRef` is the Karpenter node class);
`launch_action` — `LaunchInstance` (Provisioned) or `LaunchNodeClaim` (Karpenter).

Must not: perform I/O, read the clock, or decide how many claims a gap needs (`plan_launch` does).
"""

from __future__ import annotations

from gpupool.core.decisions.karpenter_nodeclaim import build_karpenter_nodeclaim
from gpupool.core.model.base import GroupKindName
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import Action, LaunchInstance, LaunchNodeClaim, OfferingRef
from gpupool.core.planning.snapshot import PoolSnapshot

__all__ = ["LAUNCHED_MODES", "launch_action", "launch_claim", "launch_class"]

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


