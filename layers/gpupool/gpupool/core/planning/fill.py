"""Exact "fill what max allows" for `cheapest`: reachable capacity tables, then targeted searches.

Role: when no plan covers the need under max, the best plan fills as much as max allows — a
two-dimensional subset-sum that LP bounds cannot settle (the LP fills max exactly). Capacities
are sums of candidate sizes, so in units of the sizes' greatest common divisors (typically 1
TFLOPS and 8 GiB) a pool's max spans a small grid. `Reach` tabulates, for suffixes of the
candidates, which (TFLOPS, VRAM) totals under max are reachable at all (one bitset over TFLOPS
per VRAM level; the node limit is ignored, so it over-approximates). `fill_exactly` walks the
reachable totals from the most coverage down; for each total it runs the branch and bound with
that total as an exact target (need = max = the total, or the need itself in a dimension that
reaches it), pruning every branch the table says cannot reach the target and bounding cost by
the LP of buying exactly the remaining total (`bound.suffix_exact_facets`). The first coverage
level with a plan within the node limit wins; among its targets the best plan by cost, nodes
and names. Exact whenever every search finishes within the budget; else None (HiGHS or the
caller's fallback decides).

Must not: know about pools or clouds, call the MILP, read the clock or log.
"""

from __future__ import annotations

import heapq
from math import gcd

from gpupool.core.planning.bound import Facets, suffix_exact_facets, suffix_facets
from gpupool.core.planning.search import BranchAndBound, BudgetSpent
from gpupool.core.planning.selection import (
    Candidate,
    Selection,
    build_selection,
    ceil_div,
    coverage,
    order_key,
)

__all__ = ["KEPT_SUFFIXES", "MAX_GRID_BITS", "Reach", "fill_exactly", "small_enough"]

# Most bits of reachability tables to build (grid × tables kept): 10⁸ bits is ~12 MB.
MAX_GRID_BITS = 100_000_000
# Suffixes whose tables are kept (the last ones: near the leaves, where pruning pays).
KEPT_SUFFIXES = 24
# A target spanning more VRAM levels than this is not checked against the table (no pruning).
_RANGE_LEVELS = 64


def _kept_suffixes(count: int) -> list[bool]:
    """Which of the count + 1 suffixes keep a table: the last KEPT_SUFFIXES, and every
    stride-th before them (at most about KEPT_SUFFIXES more)."""
    dense_from = max(count - KEPT_SUFFIXES, 0)
    stride = max(1, ceil_div(dense_from, KEPT_SUFFIXES))
    return [k >= dense_from or k % stride == 0 for k in range(count + 1)]


class Reach:
    """Which totals suffixes of `items` can reach under the caps, ignoring the node limit. Tables
    are kept for every one of the last KEPT_SUFFIXES suffixes (near the leaves, where pruning
    pays most) and for evenly spaced earlier ones; a suffix without a table is judged by the
    nearest longer one, which reaches at least as much (so the answer stays an over-estimate)."""

    def __init__(self, items: list[Candidate], cap_t: int, cap_v: int) -> None:
        self.g_t = gcd(*(c.tflops for c in items))
        self.g_v = gcd(*(c.vram for c in items))
        self.top_t, self.top_v = cap_t // self.g_t, cap_v // self.g_v
        n = len(items)
        keep = _kept_suffixes(n)
        mask = (1 << (self.top_t + 1)) - 1
        table = [1] + [0] * self.top_v
        tables: dict[int, list[int]] = {n: table}
        for k in range(n - 1, -1, -1):
            c = items[k]
            step_t, step_v = c.tflops // self.g_t, c.vram // self.g_v
            table = list(table) if keep[k] else table
            for level in range(step_v, self.top_v + 1):
                below = table[level - step_v]
                if below:
                    table[level] |= (below << step_t) & mask
            if keep[k]:
                tables[k] = table
        self.root = table
        # For each suffix k, the table of the nearest kept suffix k' ≤ k.
        self.tables: list[list[int]] = []
        for k in range(n + 1):
            self.tables.append(tables[k] if keep[k] else self.tables[-1])

    def possible(self, k: int, low: tuple[int, int], high: tuple[int, int]) -> bool:
        """Whether items k… can add a total in [low, high] (raw units, per dimension); True
        when unknown (a range too wide to check) or only reachable with earlier items too."""
        t_lo, t_hi = ceil_div(max(low[0], 0), self.g_t), min(high[0] // self.g_t, self.top_t)
        v_lo, v_hi = ceil_div(max(low[1], 0), self.g_v), min(high[1] // self.g_v, self.top_v)
        if t_lo > t_hi or v_lo > v_hi:
            return False
        if v_hi - v_lo > _RANGE_LEVELS:
            return True
        band = ((1 << (t_hi - t_lo + 1)) - 1) << t_lo
        table = self.tables[k]
        return any(table[level] & band for level in range(v_lo, v_hi + 1))


def small_enough(items: list[Candidate], cap_t: int, cap_v: int) -> bool:
    """Whether the kept reachability tables for these caps fit MAX_GRID_BITS."""
    levels_t = cap_t // gcd(*(c.tflops for c in items)) + 1
    levels_v = cap_v // gcd(*(c.vram for c in items)) + 1
    return levels_t * levels_v * sum(_kept_suffixes(len(items))) <= MAX_GRID_BITS


class _TargetSearch(BranchAndBound):
    """The branch and bound towards one target (exact, or a range in a dimension whose need it
    covers), pruned by the reachability tables and bounded by the exact-fill LP facets."""

    def __init__(
        self,
        items: list[Candidate],
        target: tuple[int, int, int, int],
        max_nodes: int,
        budget: int,
        reach: Reach,
        facets: list[Facets],
    ) -> None:
        lo_t, hi_t, lo_v, hi_v = target
        super().__init__(items, (lo_t, lo_v), (hi_t, hi_v), max_nodes, budget, facets=facets)
        self.reach, self.low, self.high = reach, (lo_t, lo_v), (hi_t, hi_v)
        self.span = (hi_t - lo_t, hi_v - lo_v)

    def _cost_bound(self, k: int, rem_t: int, rem_v: int, left: int) -> tuple[float, float, float, float]:
        """The best facet's bound for totals in [rem, rem + span] (see suffix_exact_facets)."""
        low_t, low_v = max(rem_t, 0), max(rem_v, 0)
        high_t, high_v = rem_t + self.span[0], rem_v + self.span[1]
        best, best_t, best_v = float("-inf"), 0.0, 0.0
        for nt, nv in self.facets[k]:
            bound = (nt * low_t if nt >= 0 else nt * high_t) + (nv * low_v if nv >= 0 else nv * high_v)
            if bound > best:
                best, best_t, best_v = bound, nt, nv
        return best, best_t, best_v, 0.0

    def run(self, k: int, tflops: int, vram: int, cost: int, nodes: int, fresh: bool = True) -> None:
        low, high = self.low, self.high
        if (tflops < low[0] or vram < low[1]) and not self.reach.possible(
            k, (low[0] - tflops, low[1] - vram), (high[0] - tflops, high[1] - vram)
        ):
            if self.budget is not None:
                self.budget -= 1
                if self.budget < 0:
                    raise BudgetSpent
            return
        super().run(k, tflops, vram, cost, nodes, fresh)


def _targets(reach: Reach, need: tuple[int, int], cap_v: int) -> list[tuple[int, int, int]]:
    """VRAM groups as (lo_v, hi_v, TFLOPS bits): one per exact level below the need, and one for
    all levels at or past it (they cover the VRAM need alike); only groups that reach anything."""
    table, g_v = reach.root, reach.g_v
    saturated_v = ceil_div(need[1], g_v)
    groups = [(lv * g_v, lv * g_v, table[lv]) for lv in range(min(saturated_v, reach.top_v + 1))]
    if saturated_v <= reach.top_v:
        merged = 0
        for lv in range(saturated_v, reach.top_v + 1):
            merged |= table[lv]
        groups.append((need[1], cap_v, merged))
    return [group for group in groups if group[2]]


def fill_exactly(
    items: list[Candidate], need: tuple[int, int], cap: tuple[int, int], max_nodes: int, budget: int
) -> Selection | None:
    """The best selection by `order_key` when searched exactly within `budget` nodes, else None."""
    (need_t, need_v), (cap_t, cap_v) = need, cap
    reach = Reach(items, *cap)
    sizes = [(c.tflops, c.vram, c.price) for c in items]
    facets = [a + b for a, b in zip(suffix_facets(sizes), suffix_exact_facets(sizes), strict=True)]
    g_t = reach.g_t
    saturated_t = ceil_div(need_t, g_t)
    heap: list[tuple[int, int, int, int, int, int]] = []  # (-coverage, group, t_level, lo_v, hi_v, bits)

    def push(group: int, lo_v: int, hi_v: int, bits: int, below: int) -> None:
        """Queue the group's best TFLOPS level under `below` (saturated first, then exact)."""
        if below > saturated_t and bits >> saturated_t:
            level = saturated_t
        else:
            rest = bits & ((1 << min(below, saturated_t)) - 1)
            if not rest:
                return
            level = rest.bit_length() - 1
        reached = coverage(min(level * g_t, need_t) if level < saturated_t else need_t, lo_v, need_t, need_v)
        heapq.heappush(heap, (-reached, group, level, lo_v, hi_v, bits))

    for group, (lo_v, hi_v, bits) in enumerate(_targets(reach, need, cap_v)):
        push(group, lo_v, hi_v, bits, reach.top_t + 2)
    while heap:
        level_key = heap[0][0]
        batch = []
        while heap and heap[0][0] == level_key:
            batch.append(heapq.heappop(heap))
        best: Selection | None = None
        for _, _, level, lo_v, hi_v, _ in batch:
            lo_t, hi_t = (need_t, cap_t) if level >= saturated_t else (level * g_t, level * g_t)
            search = _TargetSearch(items, (lo_t, hi_t, lo_v, hi_v), max_nodes, budget, reach, facets)
            if not search.finish():
                return None
            budget = search.budget or 0
            if search.covers():
                found = build_selection(items, search.best_counts, need_t, need_v)
                best = found if best is None else min(best, found, key=order_key)
        if best is not None:
            return best
        for _, group, level, lo_v, hi_v, bits in batch:
            push(group, lo_v, hi_v, bits, level)
    return build_selection(items, [0] * len(items), need_t, need_v)
