"""How AutoSelect's actions are applied (used only by the executor, through `dispatch`).

Role: `CreateNodeClaim` creates the karpenter.sh NodeClaim as the decision built it (no
GPUNodeClaim owns it; one that already exists: Skip), through the Karpenter port;
`RememberExpansions` writes the pool's memory of each pod's expansions (its annotation, re-read
and guarded by resourceVersion; an empty memory removes it). The NodeClaims of Karpenter-mode
claims are not here: the Karpenter `Compute` launches them.

Must not: decide what to create (`plan_autoselect` does), log, or check dry-run.
"""

from __future__ import annotations

from gpupool.core.decisions.autoselect_memory import ANNOTATION_EXPANSIONS
from gpupool.core.planning.plan import CreateNodeClaim, RememberExpansions
from gpupool.service.appliers import Skip, read_version, retry_conflicts
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists

__all__ = ["apply_create_nodeclaim", "apply_remember_expansions"]


def apply_create_nodeclaim(deps: Deps, action: CreateNodeClaim) -> str:
    try:
        deps.require_karpenter().create_nodeclaim(action.manifest)
    except AlreadyExists as exists:
        raise Skip(f"NodeClaim {action.manifest.name} already exists") from exists
    return f"NodeClaim {action.manifest.name} created"


def apply_remember_expansions(deps: Deps, action: RememberExpansions) -> str:
    cluster = deps.cluster

    def write() -> None:
        pool = cluster.get_pool(action.pool)
        wanted = {ANNOTATION_EXPANSIONS: action.expansions or None}
        cluster.patch_pool_annotations(action.pool, wanted, resource_version=read_version(pool))

    retry_conflicts(write)
    return "expansions remembered" if action.expansions else "expansions forgotten"
