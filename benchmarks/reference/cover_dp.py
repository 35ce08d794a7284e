"""Reference solver for uncapped problems: the least-cost full cover by dynamic programming.

Role: with no max, the most coverage is a full cover whenever any item exists, and the optimum
is the cheapest multiset covering both needs. `cheapest_cover` finds it exactly over a table
cost[t][v] = the least cost of covering at least t and v (in units of each dimension's common
divisor, so the table is exact), filled row by row: cost[t][v] = min over items of price +
cost[max(t − size_t, 0)][max(v − size_v, 0)] — every item is positive in both dimensions, so a
row reads only earlier rows (row 0 reads only earlier columns). Items another item dominates
are left out first (without caps a swap keeps a cover and costs no more). The cover is rebuilt
from the recorded choices; when it needs more nodes than the limit, or the table would be too
big, there is no answer (None) and the caller uses CP-SAT. Uses numpy arrays only, no solver:
nothing it shares with the planner decides anything.

Must not: be used with caps (the swap argument needs none), or be imported by gpupool.
"""

from __future__ import annotations

import math

import numpy as np

from benchmarks.reference.problem import Answer, Problem

__all__ = ["MAX_CELLS", "cheapest_cover"]

MAX_CELLS = 6_000_000
_INFINITY = np.iinfo(np.int64).max // 4


def _undominated(problem: Problem) -> list[int]:
    items = problem.items
    kept = []
    for j, b in enumerate(items):
        if not any(
            a.tflops >= b.tflops
            and a.vram >= b.vram
            and a.price <= b.price
            and ((a.tflops, a.vram, a.price) != (b.tflops, b.vram, b.price) or i < j)
            for i, a in enumerate(items)
            if i != j
        ):
            kept.append(j)
    return kept


def cheapest_cover(problem: Problem) -> Answer | None:
    """The least-cost full cover (None: caps set, table too big, or the cover passes the node limit)."""
    if problem.cap_tflops is not None or problem.cap_vram is not None or not problem.items:
        return None
    used = _undominated(problem)
    items = [problem.items[i] for i in used]
    g_t, g_v = math.gcd(*(i.tflops for i in items)), math.gcd(*(i.vram for i in items))
    rows, cols = -(-max(problem.need_tflops, 0) // g_t), -(-max(problem.need_vram, 0) // g_v)
    if (rows + 1) * (cols + 1) > MAX_CELLS:
        return None
    size_t = [i.tflops // g_t for i in items]
    size_v = [i.vram // g_v for i in items]
    price = np.array([i.price for i in items], dtype=np.int64)
    cost = np.full((rows + 1, cols + 1), _INFINITY, dtype=np.int64)
    choice = np.full((rows + 1, cols + 1), -1, dtype=np.int32)
    cost[0, 0] = 0
    columns = np.arange(cols + 1)
    sources = [np.maximum(columns - s, 0) for s in size_v]
    for v in range(1, cols + 1):  # row 0: VRAM only
        options = price + np.array([cost[0, max(v - s, 0)] for s in size_v], dtype=np.int64)
        best = int(np.argmin(options))
        cost[0, v], choice[0, v] = options[best], best
    for t in range(1, rows + 1):
        options = np.stack([price[k] + cost[max(t - size_t[k], 0), sources[k]] for k in range(len(items))])
        best_rows = np.argmin(options, axis=0)
        cost[t] = options[best_rows, columns]
        choice[t] = best_rows
    counts = [0] * len(problem.items)
    t, v = rows, cols
    while t > 0 or v > 0:
        k = int(choice[t, v])
        counts[used[k]] += 1
        t, v = max(t - size_t[k], 0), max(v - size_v[k], 0)
    answer = Answer.of(problem, counts)
    if answer.cost != int(cost[rows, cols]) or answer.nodes > problem.max_nodes:
        return None
    return answer
