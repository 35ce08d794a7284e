"""Optional accelerator for `selection`: the same choice solved as a MILP by HiGHS (`highspy`).

Role: when the pure branch and bound outgrows its node budget (many near-equal mixes of small
types, typically 50–100 nodes), solve the same problem lexicographically with HiGHS: (1) cover the
need if any plan can, else maximise coverage; (2) minimise cost; (3) minimise nodes at that cost;
(4) among those, prefer earlier-named candidates (a weighted objective: exact for the pure
search's name order on two-way ties, an approximation of it on wider ties). Stages 1–3 are exact:
sizes and prices are integers and the MIP gaps are set to prove optimality.

`highspy` is imported lazily; without it `milp_available()` is False and the pure search simply
runs to the end. Must not: be required by the Lambda layer, log, or read anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpupool.core.selection import Candidate

__all__ = ["MILP_STAGE_SECONDS", "milp_available", "solve_by_milp"]

# Wall-clock limit per HiGHS stage; a stage that runs out is treated as "not proven".
MILP_STAGE_SECONDS = 1.0


@cache
def milp_available() -> bool:
    return find_spec("highspy") is not None


class _Model:
    """One HiGHS model of the selection constraints (caps, node limit) over integer counts."""

    def __init__(self, items: Sequence[Candidate], cap: tuple[int, int], max_nodes: int) -> None:
        import highspy

        self.h: Any = highspy.Highs()  # type: ignore[no-untyped-call]
        self.h.silent()
        self.h.setOptionValue("mip_rel_gap", 0.0)
        self.h.setOptionValue("mip_abs_gap", 0.5)  # integer objectives: a gap under 1 proves optimality
        self.h.setOptionValue("time_limit", MILP_STAGE_SECONDS)
        self.x = [self.h.addIntegral(lb=0, ub=max_nodes) for _ in items]
        self.tflops = self._sum(c.tflops for c in items)
        self.vram = self._sum(c.vram for c in items)
        self.cost = self._sum(c.price for c in items)
        self.nodes = self._sum(1 for _ in items)
        self.h.addConstr(self.nodes <= max_nodes)
        self.h.addConstr(self.tflops <= cap[0])
        self.h.addConstr(self.vram <= cap[1])

    def _sum(self, weights: Any) -> Any:
        terms = [w * x for w, x in zip(weights, self.x, strict=True)]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    def solve(self, objective: Any, *, maximize: bool = False) -> list[int] | None:
        import highspy

        if maximize:
            self.h.maximize(objective)
        else:
            self.h.minimize(objective)
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return [round(v) for v in self.h.vals(self.x)]


def solve_by_milp(
    items: Sequence[Candidate], *, need: tuple[int, int], cap: tuple[int, int], max_nodes: int
) -> list[int] | None:
    """Counts per item (same order as `items`) optimal by the selection's order of objectives.

    None when HiGHS could not prove stages 1–2 within MILP_STAGE_SECONDS each.
    """
    need_t, need_v = need
    model = _Model(items, cap, max_nodes)
    model.h.addConstr(model.tflops >= need_t)
    model.h.addConstr(model.vram >= need_v)
    counts = model.solve(model.cost)
    if counts is None and model.h.getModelStatus() != _infeasible():
        return None
    if counts is None:
        model = _Model(items, cap, max_nodes)
        y_t = model.h.addVariable(lb=0, ub=need_t)
        y_v = model.h.addVariable(lb=0, ub=need_v)
        model.h.addConstr(y_t - model.tflops <= 0)
        model.h.addConstr(y_v - model.vram <= 0)
        coverage = y_t * max(need_v, 1) + y_v * max(need_t, 1)
        best = model.solve(coverage, maximize=True)
        if best is None:
            return None
        reached = min(_dot(items, best, "tflops"), need_t) * max(need_v, 1) + min(
            _dot(items, best, "vram"), need_v
        ) * max(need_t, 1)
        model.h.addConstr(coverage >= reached)
        counts = model.solve(model.cost)
        if counts is None:
            return None
    cost = _dot(items, counts, "price")
    model.h.addConstr(model.cost <= cost)
    fewer = model.solve(model.nodes)
    if fewer is not None and _dot(items, fewer, "price") <= cost:
        counts = fewer
    nodes = sum(counts)
    model.h.addConstr(model.nodes <= nodes)
    rank = sorted(range(len(items)), key=lambda i: items[i].name)
    weight = {i: len(items) - r for r, i in enumerate(rank)}
    named = model.solve(model._sum(weight[i] for i in range(len(items))), maximize=True)
    if named is not None and _dot(items, named, "price") <= cost and sum(named) <= nodes:
        counts = named
    return counts


def _infeasible() -> Any:
    import highspy

    return highspy.HighsModelStatus.kInfeasible


def _dot(items: Sequence[Candidate], counts: Sequence[int], attribute: str) -> int:
    return sum(int(getattr(c, attribute)) * n for c, n in zip(items, counts, strict=True))
