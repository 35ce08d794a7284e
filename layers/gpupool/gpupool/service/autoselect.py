"""AutoSelect expansion in the launch function: read pending pods and Karpenter's objects, plan, apply.

Role: `expand_autoselect(pool, deps, executor, outcome)` (called by the launch round of an
AutoSelect pool, under the pool's Lease). It reads the state itself — never the event that
triggered it: the pool's TensorFusion pods waiting for GPU capacity (`core.vocabulary.pods`:
`is_unschedulable`, `pool_of`), every Node, every NodeClaim and NodePool (these reads are all
here, in one place) — and applies `plan_autoselect`, which draws candidates from and prices
expansions with the catalog (`deps.offerings`), against the pool's memories and budget. Without
a Karpenter port it notes why and does nothing.

Must not: decide itself, or create anything but through the executor.
"""

from __future__ import annotations

from gpupool.core.decisions.autoselect import DEFAULT_MAX_IN_FLIGHT, plan_autoselect
from gpupool.core.model.pool import GPUPool
from gpupool.core.vocabulary.pods import is_unschedulable, pool_of
from gpupool.service.deps import Deps
from gpupool.service.executor import Executor
from gpupool.service.outcome import Outcome
from gpupool.service.results import record_results

__all__ = ["expand_autoselect"]


def expand_autoselect(pool: GPUPool, deps: Deps, executor: Executor, outcome: Outcome) -> None:
    if deps.karpenter is None:
        outcome.note(f"pool {pool.name}: AutoSelect needs Karpenter's API; none is wired")
        return
    pods = [p for p in deps.cluster.list_pods() if is_unschedulable(p) and pool_of(p) == pool.name]
    if not pods:
        outcome.note(f"pool {pool.name}: no unschedulable TensorFusion pod; nothing to expand")
    nodeclaims = deps.karpenter.list_nodeclaims(ours_only=False)
    plan = plan_autoselect(
        pods,
        deps.cluster.list_nodes(),
        nodeclaims,
        deps.karpenter.list_nodepools(),
        suffixes=[deps.new_suffix() for _ in range(min(len(pods), DEFAULT_MAX_IN_FLIGHT))],
        now=deps.clock.now(),
        max_in_flight=DEFAULT_MAX_IN_FLIGHT,
        pool=pool,
        offerings=deps.offerings,
        unavailable_for=deps.settings.offering_unavailable_for,
    )
    record_results(outcome, plan, executor.apply(plan))
