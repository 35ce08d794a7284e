"""The LP bound the search prunes with equals the LP optimum (best single type or best pair of
types covering the remaining need fractionally), for every suffix of the candidates."""

from __future__ import annotations

import random

import pytest

from gpupool.core.selection_bound import suffix_facets


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
