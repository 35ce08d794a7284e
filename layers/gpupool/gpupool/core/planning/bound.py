"""Exact LP lower bounds for the selection search: the cheapest fractional cover of a remaining need.

Role: for every suffix of the ordered candidates, the facets of the LP relaxation
    min Σ price_i·x_i  subject to  Σ tflops_i·x_i ≥ R_t,  Σ vram_i·x_i ≥ R_v,  x ≥ 0.
With a_i = price_i·x_i dollars spent on candidate i, the capacity bought per dollar lies in the
convex hull of the points q_i = (tflops_i, vram_i) / price_i, so the LP value is max_f n_f·R over the
facets n_f·q = 1 of that hull's down-closure (its upper-right boundary, plus the top and right
edges). Each facet is a vertex of the dual LP, so n_f·R is a valid lower bound on its own and the
maximum is the exact LP value. A suffix's hull comes from the next suffix's hull vertices plus one
point (a point off a hull never returns to it), so all suffixes cost O(n·h log h) for h vertices.

Must not: know candidates' names, ties or limits; it returns numbers for `cheapest` to prune with.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

__all__ = ["Facets", "suffix_facets"]

# Golden-section steps for the node price: each shrinks the interval by 0.618 (16: to ~5e-4).
NODE_PRICE_STEPS = 16
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


def suffix_facets(sizes: Sequence[tuple[int, int, float]]) -> list[Facets]:
    """Facets for each suffix of (tflops, vram, price); the last entry (empty suffix) is ()."""
    result: list[Facets] = [()] * (len(sizes) + 1)
    chain: list[tuple[float, float]] = []
    for k in range(len(sizes) - 1, -1, -1):
        tflops, vram, price = sizes[k]
        chain = _frontier([*chain, (tflops / price, vram / price)])
        result[k] = _facets(chain)
    return result


def lp_value(
    sizes: Sequence[tuple[int, int, int]], need: tuple[int, int], node_price: float = 0.0
) -> tuple[float, float, float]:
    """(value, n_t, n_v): the LP value of covering `need` with every price raised by `node_price`,
    and the facet attaining it."""
    points = [(t / (p + node_price), v / (p + node_price)) for t, v, p in sizes]
    return max((nt * need[0] + nv * need[1], nt, nv) for nt, nv in _facets(_frontier(points)))


def node_price(sizes: Sequence[tuple[int, int, int]], need: tuple[int, int], max_nodes: int) -> float:
    """A Lagrange multiplier λ ≥ 0 for the node limit: for any λ, a plan of at most max_nodes
    nodes costs at least LP(prices + λ) − λ·max_nodes, so the best λ tightens the bound when the
    limit binds. 0 when the LP itself stays within the limit; else a golden-section search on
    that concave function (any λ is valid, so the search need not be precise)."""
    if max_nodes <= 0 or not sizes:
        return 0.0

    def gain(lam: float) -> float:
        return lp_value(sizes, need, lam)[0] - lam * max_nodes

    low, high = 0.0, float(max(p for _, _, p in sizes))
    step = high * 1e-6
    if gain(step) <= gain(0.0):
        return 0.0
    ratio = (5**0.5 - 1) / 2
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    gain_a, gain_b = gain(a), gain(b)
    for _ in range(NODE_PRICE_STEPS):
        if gain_a < gain_b:
            low, a, gain_a = a, b, gain_b
            b = low + ratio * (high - low)
            gain_b = gain(b)
        else:
            high, b, gain_b = b, a, gain_a
            a = high - ratio * (high - low)
            gain_a = gain(a)
    lam = (low + high) / 2
    return lam if gain(lam) > gain(0.0) else 0.0


def _hull(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The convex hull's vertices, counter-clockwise (Andrew's monotone chain)."""
    ordered = sorted(set(points))
    if len(ordered) <= 2:
        return ordered
    chains: list[list[tuple[float, float]]] = []
    for sequence in (ordered, ordered[::-1]):
        chain: list[tuple[float, float]] = []
        for p in sequence:
            while len(chain) >= 2 and _cross(chain[-2], chain[-1], p) <= 0:
                chain.pop()
            chain.append(p)
        chains.append(chain[:-1])
    return chains[0] + chains[1]


def _outer_facets(hull: Sequence[tuple[float, float]]) -> Facets:
    """Every line n·q = 1 through a hull edge with all points on the origin's side: a vertex of
    the dual of the exact-fill LP (components may be negative)."""
    if len(hull) == 1:
        (t, v) = hull[0]
        return ((t / (t * t + v * v), v / (t * t + v * v)),)
    facets = []
    edges = [(hull[0], hull[1])] if len(hull) == 2 else list(zip(hull, [*hull[1:], hull[0]], strict=True))
    for a, b in edges:
        det = a[0] * b[1] - a[1] * b[0]
        if det == 0:
            continue
        n = ((b[1] - a[1]) / det, (a[0] - b[0]) / det)
        if all(n[0] * q[0] + n[1] * q[1] <= 1 + 1e-12 for q in hull):
            facets.append(n)
    return tuple(facets)


def suffix_exact_facets(sizes: Sequence[tuple[int, int, float]]) -> list[Facets]:
    """Per suffix, facets n with n·size_i ≤ price_i for every candidate of the suffix, signs
    free: for a plan whose totals lie in [low, high] per dimension, the cost is at least
    Σ_d (n_d·low_d if n_d ≥ 0 else n_d·high_d). With low = high (an exact fill) the best facet
    gives the LP value of buying exactly that total, higher than the covering LP's."""
    result: list[Facets] = [()] * (len(sizes) + 1)
    hull: list[tuple[float, float]] = []
    for k in range(len(sizes) - 1, -1, -1):
        tflops, vram, price = sizes[k]
        hull = _hull([*hull, (tflops / price, vram / price)])
        result[k] = _outer_facets(hull)
    return result
