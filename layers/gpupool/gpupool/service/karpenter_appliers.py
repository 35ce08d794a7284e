"""How a `LaunchNodeClaim` action is applied: the Karpenter-mode counterpart of launching an instance.

Role: `apply_launch_nodeclaim(deps, action)` — re-read the claim (skip when it is no longer a
Pending claim without a node), check the referenced Karpenter node class exists, adopt the
NodeClaim of the same name when a previous invocation created it (it must be owned by this
claim) or create it owned by the claim, then mark the claim Creating with the NodeClaim's id.
AutoSelect's `CreateNodeClaim` / `DeleteNodeClaim` create and delete expansion NodeClaims
(one that already exists / is already gone: Skip).

Must not: decide what to launch (`plan_launch` does), log, or check dry-run.
"""

from __future__ import annotations

from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_instance_id, owned_by
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.planning.plan import CreateNodeClaim, DeleteNodeClaim, LaunchNodeClaim
from gpupool.service.appliers import Skip, set_phase
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists, NotFound, PermanentError
from gpupool.service.karpenter_ports import KarpenterApi

__all__ = ["apply_create_nodeclaim", "apply_delete_nodeclaim", "apply_launch_nodeclaim", "require_karpenter"]


def require_karpenter(deps: Deps) -> KarpenterApi:
    """The Karpenter port, or PermanentError saying that this deployment has none."""
    if deps.karpenter is None:
        raise PermanentError(
            "Karpenter mode needs Karpenter's API in the cluster; this deployment has none wired"
        )
    return deps.karpenter


def _adopt(karpenter: KarpenterApi, claim: GPUNodeClaim) -> KarpenterNodeClaim | None:
    try:
        existing = karpenter.get_nodeclaim(claim.name)
    except NotFound:
        return None
    owners = {o.uid for o in existing.metadata.owner_references if o.controller}
    if claim.metadata.uid not in owners:
        raise PermanentError(f"NodeClaim {claim.name} exists but is not owned by GPUNodeClaim {claim.name}")
    return existing


def apply_launch_nodeclaim(deps: Deps, action: LaunchNodeClaim) -> str:
    karpenter = require_karpenter(deps)
    name = action.claim or ""
    claim = deps.cluster.get_claim(name)
    status = claim.status or GPUNodeClaimStatus()
    if claim.metadata.deletion_timestamp is not None or status.phase != "Pending" or status.instance_id:
        raise Skip(f"claim is {status.phase} with {status.instance_id}; no NodeClaim to create")
    ref = action.manifest.spec.node_class_ref
    if ref is None:
        raise PermanentError(f"NodeClaim {name} has no nodeClassRef")
    if not karpenter.node_class_exists(ref):
        raise PermanentError(f"{ref.kind} {ref.name} ({ref.group}) not found")
    how = "adopted"
    if _adopt(karpenter, claim) is None:
        try:
            karpenter.create_nodeclaim(owned_by(action.manifest, claim))
            how = "created"
        except AlreadyExists:
            if _adopt(karpenter, claim) is None:  # created and deleted in between: next round decides
                raise Skip(f"NodeClaim {name} came and went; the next decision re-checks") from None
    instance_id = nodeclaim_instance_id(name)
    set_phase(deps, name, "Creating", "NodeClaimCreated", f"Karpenter NodeClaim {name} {how}", instance_id)
    return f"NodeClaim {name} {how}"


def apply_create_nodeclaim(deps: Deps, action: CreateNodeClaim) -> str:
    try:
        require_karpenter(deps).create_nodeclaim(action.manifest)
    except AlreadyExists as exists:
        raise Skip(f"NodeClaim {action.manifest.name} already exists") from exists
    return f"NodeClaim {action.manifest.name} created"


def apply_delete_nodeclaim(deps: Deps, action: DeleteNodeClaim) -> str:
    try:
        require_karpenter(deps).delete_nodeclaim(action.nodeclaim)
    except NotFound as gone:
        raise Skip(f"NodeClaim {action.nodeclaim} already gone") from gone
    return f"NodeClaim {action.nodeclaim} deletion requested"
