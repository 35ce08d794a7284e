"""Reference solvers that check `selection.select_cheapest`: exhaustive enumeration and a MILP.

Role: independent, obviously-correct (and slow) ways to reach the same optimum, used by the unit
tests (enumeration, with every tie-break) and by `benchmarks/plan_cost.py` (HiGHS MILP for cases
too large to enumerate). `highspy` is imported only inside `select_by_milp`, so the Lambda layer
never needs it.

Must not: be called on the planning path; it exists to verify, not to decide.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from gpupool.core.planning.cheapest import DEFAULT_MAX_NODES
from gpupool.core.planning.selection import Candidate, Selection, build_selection
from gpupool.core.planning.selection import coverage as coverage_of

__all__ = ["MilpResult", "select_by_enumeration", "select_by_milp"]

_UNBOUNDED = 1 << 62


def select_by_enumeration(
    candidates: Sequence[Candidate],
    *,
    need_tflops: int,
    need_vram: int,
    cap_tflops: int | None = None,
    cap_vram: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Selection:
    """Try every count vector with at most `max_nodes` nodes; keep the best by the same order."""
    need_t, need_v = max(need_tflops, 0), max(need_vram, 0)
    cap_t = _UNBOUNDED if cap_tflops is None else cap_tflops
    cap_v = _UNBOUNDED if cap_vram is None else cap_vram
    items = list(candidates)
    if need_t == 0 and need_v == 0:
        return build_selection([], [], need_t, need_v)
    best: tuple[int, int, int, tuple[str, ...]] | None = None
    best_counts: tuple[int, ...] = (0,) * len(items)
    for counts in itertools.product(range(max_nodes + 1), repeat=len(items)):
        if sum(counts) > max_nodes:
            continue
        tflops = sum(c.tflops * n for c, n in zip(items, counts, strict=True))
        vram = sum(c.vram * n for c, n in zip(items, counts, strict=True))
        if tflops > cap_t or vram > cap_v:
            continue
        cost = sum(c.price * n for c, n in zip(items, counts, strict=True))
        names = tuple(sorted(c.name for c, n in zip(items, counts, strict=True) for _ in range(n)))
        key = (-coverage_of(tflops, vram, need_t, need_v), cost, sum(counts), names)
        if best is None or key < best:
            best, best_counts = key, counts
    return build_selection(items, best_counts, need_t, need_v)


class MilpResult:
    """The MILP's optimum: coverage (as in `selection._coverage`, exact) and cost."""

    def __init__(self, coverage: int, cost: int) -> None:
        self.coverage, self.cost = coverage, cost


def select_by_milp(
    candidates: Sequence[Candidate],
    *,
    need_tflops: int,
    need_vram: int,
    cap_tflops: int | None = None,
    cap_vram: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> MilpResult:
    """Solve with HiGHS in two stages: most coverage, then least cost at that coverage."""
    import highspy

    need_t, need_v = max(need_tflops, 0), max(need_vram, 0)
    scale_t, scale_v = max(need_t, 1), max(need_v, 1)

    def build() -> tuple[Any, list[Any], Any, Any]:
        h: Any = highspy.Highs()  # type: ignore[no-untyped-call]
        h.silent()
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 1e-9)
        h.setOptionValue("threads", 1)  # as selection_milp: one thread pool per process
        xs = [h.addIntegral(lb=0, ub=max_nodes) for _ in candidates]
        tflops = sum((c.tflops * x for c, x in zip(candidates, xs, strict=True)), start=0 * xs[0])
        vram = sum((c.vram * x for c, x in zip(candidates, xs, strict=True)), start=0 * xs[0])
        h.addConstr(sum(xs[1:], start=xs[0]) <= max_nodes)
        if cap_tflops is not None:
            h.addConstr(tflops <= cap_tflops)
        if cap_vram is not None:
            h.addConstr(vram <= cap_vram)
        y_t = h.addVariable(lb=0, ub=need_t)
        y_v = h.addVariable(lb=0, ub=need_v)
        h.addConstr(y_t - tflops <= 0)
        h.addConstr(y_v - vram <= 0)
        coverage = (y_t if need_t else 0 * y_t + scale_t) / scale_t + (
            y_v if need_v else 0 * y_v + scale_v
        ) / scale_v
        cost = sum((c.price * x for c, x in zip(candidates, xs, strict=True)), start=0 * xs[0])
        return h, xs, coverage, cost

    h, _, coverage, _ = build()
    h.maximize(coverage)
    best_coverage = float(h.getInfo().objective_function_value)
    h, xs, coverage, cost = build()
    h.addConstr(coverage >= best_coverage - 1e-9)
    h.minimize(cost)
    values = h.vals(xs)
    counts = [round(v) for v in values]
    chosen = build_selection(list(candidates), counts, need_t, need_v)
    return MilpResult(coverage=coverage_of(chosen.tflops, chosen.vram, need_t, need_v), cost=chosen.cost)
