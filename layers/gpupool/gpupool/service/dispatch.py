"""Which applier applies which action: one `match` over the Action union, checked by mypy.

Role: `apply_action(deps, action) -> str` routes each action kind to its applier (`appliers`,
`appliers_pool`, `appliers_cluster`, `appliers_autoselect`, `drain`), handing each what it
uses (the Cluster port's role for an applier that needs only that; the deps otherwise); the
final `assert_never` makes mypy prove that every member of `planning.plan.Action` is handled,
so a new action kind cannot be forgotten here.

Must not: apply anything itself, log, or check dry-run (the executor does both).
"""

from __future__ import annotations

from typing import assert_never

from gpupool.core.planning.plan import (
    Action,
    ApplyPool,
    CordonNode,
    CreateClaim,
    CreateNodeClaim,
    DeleteClaim,
    DrainNode,
    LabelNode,
    LaunchInstance,
    MarkClaimInterrupted,
    MarkOfferingUnavailable,
    PatchPoolStatus,
    RecordEvent,
    ReleaseClaim,
    RememberExpansions,
    SetClaimPhase,
    SetClusterCondition,
    TerminateInstance,
)
from gpupool.service import appliers, appliers_pool
from gpupool.service.appliers_autoselect import apply_create_nodeclaim, apply_remember_expansions
from gpupool.service.appliers_cluster import apply_set_cluster_condition
from gpupool.service.deps import Deps
from gpupool.service.drain import apply_drain

__all__ = ["apply_action"]


def apply_action(deps: Deps, action: Action) -> str:
    """Apply one action; raises `appliers.Skip` when it no longer applies, or a domain error."""
    match action:
        case ApplyPool():
            return appliers_pool.apply_pool(deps.cluster, action)
        case CreateClaim():
            return appliers.apply_create_claim(deps, action)
        case LaunchInstance():
            return appliers.apply_launch_instance(deps, action)
        case SetClaimPhase():
            return appliers.apply_set_claim_phase(deps, action)
        case TerminateInstance():
            return appliers.apply_terminate(deps, action)
        case DeleteClaim():
            return appliers.apply_delete_claim(deps.cluster, action)
        case ReleaseClaim():
            return appliers.apply_release_claim(deps.cluster, action)
        case CordonNode():
            return appliers.apply_cordon(deps.cluster, action)
        case DrainNode():
            return apply_drain(deps, action)
        case LabelNode():
            return appliers.apply_label(deps.cluster, action)
        case MarkClaimInterrupted():
            return appliers.apply_mark_interrupted(deps.cluster, action)
        case MarkOfferingUnavailable():
            return appliers_pool.apply_mark_offering_unavailable(deps, action)
        case PatchPoolStatus():
            return appliers_pool.apply_patch_pool_status(deps.cluster, action)
        case SetClusterCondition():
            return apply_set_cluster_condition(deps.cluster, action)
        case CreateNodeClaim():
            return apply_create_nodeclaim(deps, action)
        case RememberExpansions():
            return apply_remember_expansions(deps, action)
        case RecordEvent():
            return appliers_pool.apply_event(deps.cluster, action)
        case _:
            assert_never(action)
