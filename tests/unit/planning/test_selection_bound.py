"""The LP bound the search prunes with equals the LP optimum (best single type or best pair of
types covering the remaining need fractionally), for every suffix of the candidates; the
node-priced (Lagrangian) bound stays below the cheapest plan within the node limit."""

from __future__ import annotations

import random

import pytest

from gpupool.core.planning.bound import lp_value, node_price, suffix_exact_facets, suffix_facets


def _lp_by_pairs(sizes: list[tuple[int, int, int]], need: tuple[int, int]) -> float:
    """A 2-row covering LP has an optimal basis of at most two columns: try them all."""
    best = min(price * max(need[0] / t, need[1] / v) for t, v, price in sizes)
    for t1, v1, p1 in sizes:
        for t2, v2, p2 in sizes:
            det = t1 * v2 - t2 * v1
            if det == 0:
                continue
            x = (need[0] * v2 - need[1] * t2) / det
            y = (t1 * need[1] - v1 * need[0]) / det
            if x >= 0 and y >= 0:
                best = min(best, p1 * x + p2 * y)
    return best


@pytest.mark.parametrize("seed", range(5))
def test_bound_is_the_lp_value_for_every_suffix(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        sizes = [
            (rng.randint(1, 60), rng.randint(1, 60), rng.randint(1, 60)) for _ in range(rng.randint(1, 9))
        ]
        need = (rng.randint(0, 200), rng.randint(0, 200))
        for k, facets in enumerate(suffix_facets(sizes)[:-1]):
            bound = max(a * need[0] + b * need[1] for a, b in facets)
            assert bound == pytest.approx(_lp_by_pairs(sizes[k:], need), rel=1e-9, abs=1e-9)


def test_empty_suffix_has_no_facets() -> None:
    assert suffix_facets([(1, 1, 1)])[-1] == ()


def _cheapest_within(sizes: list[tuple[int, int, int]], need: tuple[int, int], max_nodes: int) -> int | None:
    """Brute force: the cheapest integer cover with at most max_nodes nodes (None if none)."""
    import itertools

    best = None
    for counts in itertools.product(range(max_nodes + 1), repeat=len(sizes)):
        if sum(counts) > max_nodes:
            continue
        if sum(n * t for n, (t, _, _) in zip(counts, sizes, strict=True)) < need[0]:
            continue
        if sum(n * v for n, (_, v, _) in zip(counts, sizes, strict=True)) < need[1]:
            continue
        cost = sum(n * p for n, (_, _, p) in zip(counts, sizes, strict=True))
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_node_priced_bound_never_exceeds_the_cheapest_plan_within_the_node_limit(seed: int) -> None:
    rng = random.Random(100 + seed)
    raised = 0
    for _ in range(60):
        sizes = [
            (rng.randint(1, 40), rng.randint(1, 40), rng.randint(1, 60)) for _ in range(rng.randint(1, 3))
        ]
        need, max_nodes = (rng.randint(1, 120), rng.randint(1, 120)), rng.randint(1, 6)
        cheapest = _cheapest_within(sizes, need, max_nodes)
        lam = node_price(sizes, need, max_nodes)
        assert lam >= 0
        priced = lp_value(sizes, need, lam)[0] - lam * max_nodes
        plain = lp_value(sizes, need)[0]
        assert priced >= plain - 1e-6 * max(plain, 1)  # never weaker than the plain LP bound
        if cheapest is not None:
            assert priced <= cheapest + 1e-6 * cheapest
        raised += priced > plain + 1e-6
    assert raised > 0  # the node limit binds in some cases, and the bound then rises


@pytest.mark.parametrize("seed", range(4))
def test_exact_fill_facets_bound_every_plan_with_those_totals(seed: int) -> None:
    """For any plan with totals in [low, high], the facets' bound never exceeds its cost, and on
    an exact fill it is at least the covering LP bound."""
    import itertools

    rng = random.Random(300 + seed)
    for _ in range(30):
        sizes = [
            (rng.randint(1, 30), rng.randint(1, 30), rng.randint(1, 50)) for _ in range(rng.randint(1, 4))
        ]
        facets = suffix_exact_facets(sizes)[0]
        cover = suffix_facets(sizes)[0]
        for counts in itertools.product(range(4), repeat=len(sizes)):
            totals = [sum(n * s[d] for n, s in zip(counts, sizes, strict=True)) for d in (0, 1)]
            cost = sum(n * s[2] for n, s in zip(counts, sizes, strict=True))
            widen = rng.randint(0, 5)
            low, high = (totals[0] - widen, totals[1]), (totals[0] + widen, totals[1])
            bound = max(
                (nt * max(low[0], 0) if nt >= 0 else nt * high[0])
                + (nv * low[1] if nv >= 0 else nv * high[1])
                for nt, nv in facets
            )
            assert bound <= cost + 1e-9 * max(cost, 1)
            exact = max(nt * totals[0] + nv * totals[1] for nt, nv in facets)
            assert exact >= max(nt * totals[0] + nv * totals[1] for nt, nv in cover) - 1e-9 * max(cost, 1)
