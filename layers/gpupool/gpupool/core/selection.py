"""Exact choice of the cheapest multiset of offerings that covers a capacity gap.

Role: given candidates (each with integer TFLOPS, VRAM and hourly price units), a need and a
headroom (what maxResources still allows), pick counts minimising, in this order:
1. the uncovered part of the need (0 whenever a full cover fits under the headroom; otherwise
   "fill what max allows": maximise Σ_d min(offered_d, need_d) / need_d),
2. the hourly cost, 3. the number of nodes, 4. the sorted candidate names (a stable tie-break).
Offered capacity never exceeds the headroom and the node count never exceeds `max_nodes`.

Method: depth-first branch and bound over candidates ordered by how cheaply each covers the need
alone. Bounds: coverage still reachable (headroom and node limit), and the exact LP value of
covering what remains with the candidates not yet branched on (`selection_bound`). Candidates of
identical size keep only the cheapest (then first-named), which cannot change the optimum under
any tie-break. Pure Python, so the Lambda layer stays small. Large mixes (50–100 nodes of many
near-equal small types) can outgrow PURE_SEARCH_BUDGET; then the HiGHS MILP in `selection_milp`
finishes the job when highspy is installed (the better of both plans by exact integers is kept).
`selection_reference` holds the brute-force and MILP checks the tests and the benchmark use.

Must not: know about pools, catalogs or clouds (see `selection_pool`), read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpupool.core.selection_bound import suffix_facets
from gpupool.core.selection_milp import milp_available, solve_by_milp

__all__ = ["DEFAULT_MAX_NODES", "Candidate", "Selection", "select_cheapest"]

DEFAULT_MAX_NODES = 100
# Nodes the pure search may visit before the MILP accelerator takes over (when installed), and
# before it gives up without one, returning its best plan marked not proven optimal.
PURE_SEARCH_BUDGET = 2_000
# Nodes of the first pass, whose best plan lets reduced-cost fixing drop candidates.
FIRST_PASS_BUDGET = 300
UNACCELERATED_SEARCH_BUDGET = 2_000_000
_UNBOUNDED = 1 << 62


@dataclass(frozen=True, slots=True)
class Candidate:
    """One offering as the solver sees it: sizes and price in integer units (e.g. mTFLOPS, MiB, µUSD)."""

    name: str
    tflops: int
    vram: int
    price: int

    def __post_init__(self) -> None:
        if self.tflops <= 0 or self.vram <= 0 or self.price <= 0:
            raise ValueError(f"candidate {self.name} needs positive size and price")


@dataclass(frozen=True, slots=True)
class Selection:
    """Chosen counts (positive only, by name) with their totals."""

    counts: tuple[tuple[Candidate, int], ...]
    tflops: int
    vram: int
    cost: int
    nodes: int
    covers_need: bool
    need: tuple[int, int] = (0, 0)
    proven_optimal: bool = True

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(c.name for c, n in self.counts for _ in range(n)))


def _coverage(tflops: int, vram: int, need_t: int, need_v: int) -> int:
    """Σ_d min(offered_d, need_d) / need_d, scaled by need_t × need_v to stay an integer."""
    scale_t, scale_v = max(need_t, 1), max(need_v, 1)
    covered_t = min(tflops, need_t) if need_t else 1
    covered_v = min(vram, need_v) if need_v else 1
    return covered_t * scale_v + covered_v * scale_t


def _selection(
    items: Sequence[Candidate], counts: Sequence[int], need_t: int, need_v: int, *, proven: bool = True
) -> Selection:
    chosen = tuple(sorted(((c, n) for c, n in zip(items, counts, strict=True) if n), key=lambda p: p[0].name))
    tflops = sum(c.tflops * n for c, n in chosen)
    vram = sum(c.vram * n for c, n in chosen)
    return Selection(
        counts=chosen,
        tflops=tflops,
        vram=vram,
        cost=sum(c.price * n for c, n in chosen),
        nodes=sum(n for _, n in chosen),
        covers_need=tflops >= need_t and vram >= need_v,
        need=(need_t, need_v),
        proven_optimal=proven,
    )


def _order(selection: Selection) -> tuple[int, int, int, tuple[str, ...]]:
    """The selection's order of objectives as one exact key (smaller is better)."""
    coverage = _coverage(selection.tflops, selection.vram, *selection.need)
    return (-coverage, selection.cost, selection.nodes, selection.names())


def _distinct_sizes(candidates: Sequence[Candidate]) -> list[Candidate]:
    best: dict[tuple[int, int], Candidate] = {}
    for c in candidates:
        kept = best.get((c.tflops, c.vram))
        if kept is None or (c.price, c.name) < (kept.price, kept.name):
            best[(c.tflops, c.vram)] = c
    return list(best.values())


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _alone_cost(c: Candidate, need_t: int, need_v: int) -> int:
    return c.price * max(_ceil_div(need_t, c.tflops), _ceil_div(need_v, c.vram), 1)


class _BudgetSpent(Exception):
    """The pure search visited its budget of nodes; hand the problem to the MILP accelerator."""


class _Search:
    def __init__(
        self,
        items: list[Candidate],
        need: tuple[int, int],
        cap: tuple[int, int],
        max_nodes: int,
        budget: int | None,
    ) -> None:
        (need_t, need_v), (cap_t, cap_v) = need, cap
        self.items, self.need_t, self.need_v = items, need_t, need_v
        self.cap_t, self.cap_v, self.max_nodes = cap_t, cap_v, max_nodes
        self.full = _coverage(need_t, need_v, need_t, need_v)
        n = len(items)
        self.max_t = [0] * (n + 1)
        self.max_v = [0] * (n + 1)
        for k in range(n - 1, -1, -1):
            self.max_t[k] = max(self.max_t[k + 1], items[k].tflops)
            self.max_v[k] = max(self.max_v[k + 1], items[k].vram)
        self.facets = suffix_facets([(c.tflops, c.vram, c.price) for c in items])
        self.counts = [0] * n
        self.budget = budget
        self.best_key: tuple[int, int, int] = (1, 0, 0)  # (-coverage, cost, nodes); 1 = nothing yet
        self.best_counts: list[int] = []
        self.best_names: tuple[str, ...] = ()

    def _offer(self, tflops: int, vram: int, cost: int, nodes: int) -> None:
        key = (-_coverage(tflops, vram, self.need_t, self.need_v), cost, nodes)
        if key > self.best_key and self.best_key[0] != 1:
            return
        names = tuple(sorted(c.name for c, n in zip(self.items, self.counts, strict=True) for _ in range(n)))
        if key < self.best_key or self.best_key[0] == 1 or names < self.best_names:
            self.best_key, self.best_counts, self.best_names = key, list(self.counts), names

    def possibly_optimal(self) -> list[int]:
        """Indices of candidates that can appear in a plan no dearer than the best found
        (reduced-cost fixing: each LP facet n is dual-feasible, so a plan costs at least
        n·need + Σ (price_i − n·size_i)·x_i; a candidate whose reduced price alone exceeds
        best − n·need cannot be used). Only for full covers; otherwise every index."""
        if not self.best_counts or -self.best_key[0] != self.full:
            return list(range(len(self.items)))
        best = self.best_key[1]
        tolerance = 1.0 + best * 1e-9
        kept = []
        for i, c in enumerate(self.items):
            if all(
                c.price - (nt * c.tflops + nv * c.vram)
                <= best - (nt * self.need_t + nv * self.need_v) + tolerance
                for nt, nv in self.facets[0]
            ):
                kept.append(i)
        return kept

    def finish(self) -> bool:
        """Run the search from the root; False when the budget ran out first."""
        self.counts = [0] * len(self.items)
        try:
            self.run(0, 0, 0, 0, 0)
        except _BudgetSpent:
            return False
        return True

    def result(self, *, proven: bool = True) -> Selection:
        counts = self.best_counts or [0] * len(self.items)
        return _selection(self.items, counts, self.need_t, self.need_v, proven=proven)

    def narrowed(self, budget: int) -> _Search:
        """A search over `possibly_optimal` candidates that starts from this one's best plan."""
        kept = self.possibly_optimal()
        narrow = _Search(
            [self.items[i] for i in kept],
            (self.need_t, self.need_v),
            (self.cap_t, self.cap_v),
            self.max_nodes,
            budget,
        )
        if self.best_counts:
            narrow.best_key, narrow.best_names = self.best_key, self.best_names
            narrow.best_counts = [self.best_counts[i] for i in kept]
        return narrow

    def _cost_bound(self, k: int, rem_t: int, rem_v: int) -> tuple[float, float, float]:
        """The exact LP value of covering what remains with candidates k… (selection_bound),
        and the facet (dual solution) that attains it."""
        rt, rv = max(rem_t, 0), max(rem_v, 0)
        return max((nt * rt + nv * rv, nt, nv) for nt, nv in self.facets[k])

    def run(self, k: int, tflops: int, vram: int, cost: int, nodes: int, fresh: bool = True) -> None:
        if self.budget is not None:
            self.budget -= 1
            if self.budget < 0:
                raise _BudgetSpent
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
        reachable = _coverage(reach_t, reach_v, self.need_t, self.need_v)
        if reachable < best_cov:
            return
        c = self.items[k]
        upper = min(left, room_t // c.tflops, room_v // c.vram)
        upper = min(upper, max(_ceil_div(max(rem_t, 0), c.tflops), _ceil_div(max(rem_v, 0), c.vram)))
        if best_cov == self.full:
            bound, nt, nv = self._cost_bound(k, rem_t, rem_v)
            slack = best_cost + 0.5 - cost - bound
            if slack < 0:
                return
            # Each unit of this candidate adds at least its reduced price to the bound.
            reduced = c.price - (nt * c.tflops + nv * c.vram)
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


def select_cheapest(
    candidates: Sequence[Candidate],
    *,
    need_tflops: int,
    need_vram: int,
    cap_tflops: int | None = None,
    cap_vram: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    accelerate: bool = True,
    pure_budget: int | None = None,
) -> Selection:
    """The exact best selection (see the module docstring for the order of objectives).

    A search that outgrows PURE_SEARCH_BUDGET nodes is finished by the HiGHS MILP in
    `selection_milp` when `accelerate` and highspy is installed, else by the pure search with
    UNACCELERATED_SEARCH_BUDGET nodes. If neither proves the optimum, the best plan found is
    returned with `proven_optimal=False` (the planner reports it as a reason). `pure_budget`
    overrides PURE_SEARCH_BUDGET (tests use 0 to exercise the MILP path).
    """
    need_t, need_v = max(need_tflops, 0), max(need_vram, 0)
    cap_t = _UNBOUNDED if cap_tflops is None else max(cap_tflops, 0)
    cap_v = _UNBOUNDED if cap_vram is None else max(cap_vram, 0)
    if max_nodes < 0:
        raise ValueError("max_nodes must not be negative")
    if (need_t == 0 and need_v == 0) or not candidates:
        return _selection([], [], need_t, need_v)
    items = sorted(_distinct_sizes(candidates), key=lambda c: (_alone_cost(c, need_t, need_v), c.name))
    budget = PURE_SEARCH_BUDGET if pure_budget is None else pure_budget
    search = _Search(items, (need_t, need_v), (cap_t, cap_v), max_nodes, min(budget, FIRST_PASS_BUDGET))
    if search.finish():
        return search.result()
    # Drop candidates that cannot beat the plan found so far, then search again from that plan.
    search = search.narrowed(max(budget - FIRST_PASS_BUDGET, 0))
    if search.finish():
        return search.result()
    if accelerate and milp_available():
        counts = solve_by_milp(search.items, need=(need_t, need_v), cap=(cap_t, cap_v), max_nodes=max_nodes)
        if counts is not None:
            milp = _selection(search.items, counts, need_t, need_v, proven=True)
            return min(milp, search.result(), key=_order)
    else:
        search.budget = UNACCELERATED_SEARCH_BUDGET
        if search.finish():
            return search.result()
    return search.result(proven=False)
