"""Exact LP lower bounds for the selection search: the cheapest fractional cover of a remaining need.

Role: for every suffix of the ordered candidates, the facets of the LP relaxation
    min Σ price_i·x_i  subject to  Σ tflops_i·x_i ≥ R_t,  Σ vram_i·x_i ≥ R_v,  x ≥ 0.
With a_i = price_i·x_i dollars spent on candidate i, the capacity bought per dollar lies in the
convex hull of the points q_i = (tflops_i, vram_i) / price_i, so the LP value is max_f n_f·R over the
facets n_f·q = 1 of that hull's down-closure (its upper-right boundary, plus the top and right
edges). Each facet is a vertex of the dual LP, so n_f·R is a valid lower bound on its own and the
maximum is the exact LP value. A suffix's hull comes from the next suffix's hull vertices plus one
point (a point off a hull never returns to it), so all suffixes cost O(n·h log h) for h vertices.

Must not: know candidates' names, ties or limits; it returns numbers for `selection` to prune with.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

__all__ = ["Facets", "suffix_facets"]

# (n_t, n_v) per facet: cost of covering R is at least n_t·R_t + n_v·R_v.
Facets = tuple[tuple[float, float], ...]


def _cross(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _frontier(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The concave upper-right chain, from the highest point to the rightmost one."""
    ordered = sorted(set(points))
    upper: list[tuple[float, float]] = []
    for p in ordered:
        while len(upper) >= 2 and _cross(upper[-2], upper[-1], p) >= 0:
            upper.pop()
        upper.append(p)
    top = max(range(len(upper)), key=lambda i: (upper[i][1], upper[i][0]))
    return upper[top:]


def _facets(chain: Sequence[tuple[float, float]]) -> Facets:
    top, right = chain[0], chain[-1]
    facets = [(0.0, 1.0 / top[1]), (1.0 / right[0], 0.0)]
    for a, b in pairwise(chain):
        det = a[0] * b[1] - a[1] * b[0]
        if det == 0:
            continue
        facets.append(((b[1] - a[1]) / det, (a[0] - b[0]) / det))
    return tuple(facets)


def suffix_facets(sizes: Sequence[tuple[int, int, int]]) -> list[Facets]:
    """Facets for each suffix of (tflops, vram, price); the last entry (empty suffix) is ()."""
    result: list[Facets] = [()] * (len(sizes) + 1)
    chain: list[tuple[float, float]] = []
    for k in range(len(sizes) - 1, -1, -1):
        tflops, vram, price = sizes[k]
        chain = _frontier([*chain, (tflops / price, vram / price)])
        result[k] = _facets(chain)
    return result
