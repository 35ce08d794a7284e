"""How AutoSelect's expansion NodeClaims are applied (used only by the executor, through `dispatch`).

Role: `CreateNodeClaim` creates the karpenter.sh NodeClaim as the decision built it (no
GPUNodeClaim owns it; one that already exists: Skip) and `DeleteNodeClaim` deletes one Karpenter
failed to launch (already gone: Skip), through the Karpenter port. The NodeClaims of
Karpenter-mode claims are not here: the Karpenter `Compute` launches them.

Must not: decide what to create (`plan_autoselect` does), log, or check dry-run.
"""

from __future__ import annotations

from gpupool.core.planning.plan import CreateNodeClaim, DeleteNodeClaim
from gpupool.service.appliers import Skip
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists, NotFound

__all__ = ["apply_create_nodeclaim", "apply_delete_nodeclaim"]


def apply_create_nodeclaim(deps: Deps, action: CreateNodeClaim) -> str:
    try:
        deps.require_karpenter().create_nodeclaim(action.manifest)
    except AlreadyExists as exists:
        raise Skip(f"NodeClaim {action.manifest.name} already exists") from exists
    return f"NodeClaim {action.manifest.name} created"


def apply_delete_nodeclaim(deps: Deps, action: DeleteNodeClaim) -> str:
    try:
        deps.require_karpenter().delete_nodeclaim(action.nodeclaim)
    except NotFound as gone:
        raise Skip(f"NodeClaim {action.nodeclaim} already gone") from gone
    return f"NodeClaim {action.nodeclaim} deletion requested"
