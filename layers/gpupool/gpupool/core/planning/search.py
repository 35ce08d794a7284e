"""Depth-first branch and bound for `cheapest`: the exact best counts, or "budget spent".

Role: given candidates in branching order, a need, a headroom and a node limit, find the counts
that are best by `selection.order_key`, visiting at most `budget` search nodes. Pruning:
coverage still reachable (headroom, node limit); the exact LP value of covering what remains with
the candidates not yet branched on (`bound`), and the reduced price of the current
candidate against the facet attaining it, which caps its count. Costs are integers, so a branch is
cut only when its bound exceeds the best cost by more than half a unit: equal-cost plans are
explored, which keeps the node and name tie-breaks exact. `narrowed` drops candidates that cannot
appear in a plan no dearer than the best found (reduced-cost fixing) and restarts from that plan;
`seed` starts from a plan found elsewhere (the MILP's).

Must not: call the MILP, read the clock or log; `cheapest` decides what to do when the budget runs out.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupool.core.planning.bound import Facets, lp_value, suffix_facets
from gpupool.core.planning.selection import (
    Candidate,
    Selection,
    alone_cost,
    build_selection,
    ceil_div,
    coverage,
)

__all__ = ["BranchAndBound", "BudgetSpent", "reduced_cost_order"]


class BudgetSpent(Exception):
    """The search visited its budget of nodes."""


def reduced_cost_order(
    items: Sequence[Candidate], need: tuple[int, int], lam: float = 0.0
) -> list[Candidate]:
    """Candidates by their reduced price against the root LP's optimal dual (the facet that
    bounds covering the whole need, prices raised by the node price `lam`), then by the cost of
    covering the need alone, then by name. The LP's own candidates come first, so the first dives
    are near the LP optimum and the suffix bounds rise fast; any order is exact, this one prunes best."""
    need_t, need_v = need
    _, dual_t, dual_v = lp_value([(c.tflops, c.vram, c.price) for c in items], need, lam)
    return sorted(
        items,
        key=lambda c: (
            c.price + lam - dual_t * c.tflops - dual_v * c.vram,
            alone_cost(c, need_t, need_v),
            c.name,
        ),
    )


class BranchAndBound:
    def __init__(
        self,
        items: list[Candidate],
        need: tuple[int, int],
        cap: tuple[int, int],
        max_nodes: int,
        budget: int | None,
        lam: float = 0.0,
        facets: list[Facets] | None = None,
    ) -> None:
        (need_t, need_v), (cap_t, cap_v) = need, cap
        self.items, self.need_t, self.need_v = items, need_t, need_v
        self.cap_t, self.cap_v, self.max_nodes = cap_t, cap_v, max_nodes
        self.full = coverage(need_t, need_v, need_t, need_v)
        n = len(items)
        self.max_t = [0] * (n + 1)
        self.max_v = [0] * (n + 1)
        for k in range(n - 1, -1, -1):
            self.max_t[k] = max(self.max_t[k + 1], items[k].tflops)
            self.max_v[k] = max(self.max_v[k + 1], items[k].vram)
        self.facets = facets or suffix_facets([(c.tflops, c.vram, c.price) for c in items])
        # With a node price lam > 0 (see bound.node_price), a second bound that
        # respects the node limit: LP(prices + lam) − lam·(nodes left).
        self.lam = lam
        self.lam_facets = suffix_facets([(c.tflops, c.vram, c.price + lam) for c in items]) if lam else []
        self.counts = [0] * n
        self.budget = budget
        self.best_key: tuple[int, int, int] = (1, 0, 0)  # (-coverage, cost, nodes); 1 = nothing yet
        self.best_counts: list[int] = []
        self.best_names: tuple[str, ...] = ()

    def _offer(self, tflops: int, vram: int, cost: int, nodes: int) -> None:
        key = (-coverage(tflops, vram, self.need_t, self.need_v), cost, nodes)
        if key > self.best_key and self.best_key[0] != 1:
            return
        names = tuple(sorted(c.name for c, n in zip(self.items, self.counts, strict=True) for _ in range(n)))
        if key < self.best_key or self.best_key[0] == 1 or names < self.best_names:
            self.best_key, self.best_counts, self.best_names = key, list(self.counts), names

    def seed(self, counts: Sequence[int]) -> None:
        """Offer a plan found elsewhere (counts in `items` order) as if the search had found it."""
        c = self.items
        self.counts = list(counts)
        self._offer(
            sum(x.tflops * n for x, n in zip(c, counts, strict=True)),
            sum(x.vram * n for x, n in zip(c, counts, strict=True)),
            sum(x.price * n for x, n in zip(c, counts, strict=True)),
            sum(counts),
        )
        self.counts = [0] * len(c)

    def covers(self) -> bool:
        """Whether the best plan so far covers the whole need."""
        return bool(self.best_counts) and -self.best_key[0] == self.full

    def possibly_optimal(self) -> list[int]:
        """Indices of candidates that can appear in a plan no dearer than the best found
        (reduced-cost fixing: each LP facet n is dual-feasible, so a plan costs at least
        n·need + Σ (price_i − n·size_i)·x_i; a candidate whose reduced price alone exceeds
        best − n·need cannot be used). Only for full covers; otherwise every index."""
        if not self.covers():
            return list(range(len(self.items)))
        best = self.best_key[1]
        tolerance = 1.0 + best * 1e-9
        need_t, need_v, lam, nodes = self.need_t, self.need_v, self.lam, self.max_nodes
        kept = []
        for i, c in enumerate(self.items):
            if all(
                c.price - (nt * c.tflops + nv * c.vram) <= best - (nt * need_t + nv * need_v) + tolerance
                for nt, nv in self.facets[0]
            ) and all(
                c.price + lam - (nt * c.tflops + nv * c.vram)
                <= best - (nt * need_t + nv * need_v - lam * nodes) + tolerance
                for nt, nv in (self.lam_facets[0] if self.lam_facets else ())
            ):
                kept.append(i)
        return kept

    def finish(self) -> bool:
        """Run the search from the root; False when the budget ran out first."""
        self.counts = [0] * len(self.items)
        try:
            self.run(0, 0, 0, 0, 0)
        except BudgetSpent:
            return False
        return True

    def result(self, *, proven: bool = True) -> Selection:
        counts = self.best_counts or [0] * len(self.items)
        return build_selection(self.items, counts, self.need_t, self.need_v, proven=proven)

    def narrowed(self, budget: int) -> BranchAndBound:
        """A search over `possibly_optimal` candidates that starts from this one's best plan."""
        kept = self.possibly_optimal()
        narrow = BranchAndBound(
            [self.items[i] for i in kept],
            (self.need_t, self.need_v),
            (self.cap_t, self.cap_v),
            self.max_nodes,
            budget,
            self.lam,
        )
        if self.best_counts:
            narrow.best_key, narrow.best_names = self.best_key, self.best_names
            narrow.best_counts = [self.best_counts[i] for i in kept]
        return narrow

    def _cost_bound(self, k: int, rem_t: int, rem_v: int, left: int) -> tuple[float, float, float, float]:
        """A lower bound on the cost of covering what remains with candidates k… within `left`
        nodes: the exact LP value (bound), or its node-priced variant when higher; with
        the facet (dual solution) and node price that attain it."""
        rt, rv = max(rem_t, 0), max(rem_v, 0)
        bound, nt, nv = max((nt * rt + nv * rv, nt, nv) for nt, nv in self.facets[k])
        if not self.lam_facets:
            return bound, nt, nv, 0.0
        priced, pt, pv = max((nt * rt + nv * rv, nt, nv) for nt, nv in self.lam_facets[k])
        priced -= self.lam * left
        return (priced, pt, pv, self.lam) if priced > bound else (bound, nt, nv, 0.0)

    def run(self, k: int, tflops: int, vram: int, cost: int, nodes: int, fresh: bool = True) -> None:
        if self.budget is not None:
            self.budget -= 1
            if self.budget < 0:
                raise BudgetSpent
        if fresh:  # a zero count repeats the parent's plan, already offered
            self._offer(tflops, vram, cost, nodes)
        rem_t, rem_v = self.need_t - tflops, self.need_v - vram
        if k == len(self.items) or (rem_t <= 0 and rem_v <= 0):
            return  # nothing left to choose, or covered: more nodes only cost more
        left = self.max_nodes - nodes
        room_t, room_v = self.cap_t - tflops, self.cap_v - vram
        reach_t = tflops + min(room_t, left * self.max_t[k])
        reach_v = vram + min(room_v, left * self.max_v[k])
        best_cov, best_cost = -self.best_key[0], self.best_key[1]
        reachable = coverage(reach_t, reach_v, self.need_t, self.need_v)
        if reachable < best_cov:
            return
        c = self.items[k]
        upper = min(left, room_t // c.tflops, room_v // c.vram)
        upper = min(upper, max(ceil_div(max(rem_t, 0), c.tflops), ceil_div(max(rem_v, 0), c.vram)))
        if best_cov == self.full:
            bound, nt, nv, lam = self._cost_bound(k, rem_t, rem_v, left)
            slack = best_cost + 0.5 - cost - bound
            if slack < 0:
                return
            # Each unit of this candidate adds at least its reduced price to the bound.
            reduced = c.price + lam - (nt * c.tflops + nv * c.vram)
            if reduced > 0:
                upper = min(upper, int(slack / reduced))
        elif reachable == best_cov and cost > best_cost:
            return
        for count in range(upper, -1, -1):
            self.counts[k] = count
            self.run(
                k + 1,
                tflops + count * c.tflops,
                vram + count * c.vram,
                cost + count * c.price,
                nodes + count,
                count > 0,
            )
        self.counts[k] = 0
