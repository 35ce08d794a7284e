"""Optional accelerator for `cheapest`: the same choice solved as a MILP by HiGHS (`highspy`).

Role: when the pure branch and bound outgrows its node budget (typically 50–100 nodes mixed from
many near-equal small types), solve the same problem with HiGHS: (1) cover the need at the least
cost, then fewest nodes — one objective, price·(max_nodes+1) + 1 per node, exact for integers —
or, when no cover fits under max, first the most coverage; (2) among those, prefer earlier-named
candidates (a weighted objective: it approximates the pure search's name order on wide ties).
HiGHS works in floating point: its optimum is proven within its tolerances, not exactly, so
the caller keeps whichever of the MILP's and its own best plans is better by exact integers.

Deterministic: HiGHS gets a branch-and-bound node limit per stage (MILP_STAGE_NODES), never a
wall-clock limit, and one thread, so the same inputs give the same plan on an idle or a loaded
machine; a stage that reaches the node limit counts as "not proven" (None), like before.

`highspy` is imported lazily; without it `milp_available()` is False and the pure search simply
runs longer. highspy is a runtime dependency and ships in the layer. Must not: log or read anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpupool.core.planning.selection import Candidate

__all__ = ["MILP_STAGE_NODES", "MilpPlan", "milp_available", "solve_by_milp"]

# Branch-and-bound nodes per HiGHS solve (work, not time); a stage that runs out is "not proven".
MILP_STAGE_NODES = 5_000
_INFINITY = 1e30


@cache
def milp_available() -> bool:
    return find_spec("highspy") is not None


class _Model:
    """Integer counts x_i (plus optional coverage variables) with dense rows, built in bulk."""

    def __init__(
        self, items: Sequence[Candidate], cap: tuple[int, int], max_nodes: int, *, presolve: bool = False
    ) -> None:
        import highspy
        import numpy as np

        self.np, self.hs = np, highspy
        self.n = len(items)
        self.h: Any = highspy.Highs()  # type: ignore[no-untyped-call]
        self.h.silent()
        # Worker threads cost more than they save on models this small; so does presolve, except
        # on the coverage stage ("fill what max allows"), where it often saves hundreds of ms.
        for option, value in (
            ("mip_rel_gap", 0.0),
            ("mip_abs_gap", 0.5),
            ("mip_max_nodes", MILP_STAGE_NODES),
            ("random_seed", 0),
            ("presolve", "on" if presolve else "off"),
            ("threads", 1),
        ):
            self.h.setOptionValue(option, value)
        zeros = np.zeros(self.n)
        self.h.addCols(self.n, zeros, zeros, np.full(self.n, float(max_nodes)), 0, [], [], [])
        self.h.changeColsIntegrality(
            self.n, np.arange(self.n, dtype=np.int32), np.full(self.n, 1, dtype=np.uint8)
        )
        self.tflops = np.array([c.tflops for c in items], dtype=float)
        self.vram = np.array([c.vram for c in items], dtype=float)
        self.price = np.array([c.price for c in items], dtype=float)
        self.row(np.ones(self.n), upper=max_nodes)
        if cap[0] < 1 << 60:
            self.row(self.tflops, upper=cap[0])
        if cap[1] < 1 << 60:
            self.row(self.vram, upper=cap[1])

    def row(self, coefficients: Any, *, lower: float = -_INFINITY, upper: float = _INFINITY) -> None:
        width = len(coefficients)
        self.h.addRow(lower, upper, width, self.np.arange(width, dtype=self.np.int32), coefficients)

    def add_continuous(self, lower: float, upper: float) -> int:
        self.h.addCol(0.0, lower, upper, 0, [], [])
        return int(self.h.getNumCol()) - 1

    def solve(self, costs: Any, *, maximize: bool = False) -> list[int] | None:
        np = self.np
        width = len(costs)
        self.h.changeColsCost(width, np.arange(width, dtype=np.int32), np.asarray(costs, dtype=float))
        sense = self.hs.ObjSense.kMaximize if maximize else self.hs.ObjSense.kMinimize
        self.h.changeObjectiveSense(sense)
        self.h.run()
        if self.h.getModelStatus() == self.hs.HighsModelStatus.kNotset:
            # HiGHS ran earlier in this process with another thread count: use its thread pool
            # (HiGHS's branch and bound is deterministic whatever the thread count).
            self.h.setOptionValue("threads", 0)
            self.h.run()
        if self.h.getModelStatus() != self.hs.HighsModelStatus.kOptimal:
            return None
        values = self.h.getSolution().col_value
        return [round(v) for v in values[: self.n]]

    def infeasible(self) -> bool:
        return bool(self.h.getModelStatus() == self.hs.HighsModelStatus.kInfeasible)


def _dot(items: Sequence[Candidate], counts: Sequence[int], attribute: str) -> int:
    return sum(int(getattr(c, attribute)) * n for c, n in zip(items, counts, strict=True))


class MilpPlan:
    """The MILP's plan (counts in `items` order), proven best by coverage, cost and nodes within
    HiGHS's tolerances; `prefer_earlier_names` runs the approximate name stage on demand."""

    def __init__(
        self, model: _Model, items: Sequence[Candidate], counts: list[int], weights: list[int]
    ) -> None:
        self._model, self._items, self.counts, self._weights = model, items, counts, weights

    def prefer_earlier_names(self) -> list[int]:
        """Among plans no worse by cost and nodes, prefer earlier-named candidates (a weighted
        objective: it approximates the lexicographic name order on wide ties)."""
        items, weights, model = self._items, self._weights, self._model
        value = sum(w * n for w, n in zip(weights, self.counts, strict=True))
        model.row([float(w) for w in weights], upper=value)
        rank = sorted(range(len(items)), key=lambda i: items[i].name)
        weight = [0.0] * len(items)
        for position, index in enumerate(rank):
            weight[index] = float(len(items) - position)
        named = model.solve(weight, maximize=True)
        if named is not None and sum(w * n for w, n in zip(weights, named, strict=True)) <= value:
            return named
        return self.counts


def solve_by_milp(
    items: Sequence[Candidate], *, need: tuple[int, int], cap: tuple[int, int], max_nodes: int
) -> MilpPlan | None:
    """The best counts by coverage, cost and nodes; None when HiGHS could not prove the coverage
    and cost stages within MILP_STAGE_NODES branch-and-bound nodes each."""
    need_t, need_v = need
    cost_and_nodes = [c.price * (max_nodes + 1) + 1 for c in items]
    counts = None
    if need_t <= cap[0] and need_v <= cap[1]:  # else no cover fits under max: skip that stage
        model = _Model(items, cap, max_nodes)
        model.row(model.tflops, lower=need_t)
        model.row(model.vram, lower=need_v)
        counts = model.solve(cost_and_nodes)
        if counts is None and not model.infeasible():
            return None
    if counts is None:  # no cover fits under max: most coverage first
        model = _Model(items, cap, max_nodes, presolve=True)
        y_t, y_v = model.add_continuous(0, need_t), model.add_continuous(0, need_v)
        model.row([*(-model.tflops), *([0.0] * (y_t - model.n)), 1.0], upper=0)
        model.row([*(-model.vram), *([0.0] * (y_v - model.n)), 1.0], upper=0)
        weights = [0.0] * model.n + [float(max(need_v, 1)), float(max(need_t, 1))]
        best = model.solve(weights, maximize=True)
        if best is None:
            return None
        reached = min(_dot(items, best, "tflops"), need_t) * max(need_v, 1) + min(
            _dot(items, best, "vram"), need_v
        ) * max(need_t, 1)
        model.row(weights, lower=reached)
        counts = model.solve([*cost_and_nodes, 0.0, 0.0])
        if counts is None:
            return None
    return MilpPlan(model, items, counts, cost_and_nodes)
