"""Reachability tables for "fill what max allows": never rule out a total some suffix of the
candidates can reach (that would lose the optimum), and exact on the suffixes whose tables are
kept; many candidates, so that earlier suffixes borrow the table of a longer one."""

from __future__ import annotations

import random

import pytest

from gpupool.core.planning.fill import KEPT_SUFFIXES, Reach
from gpupool.core.planning.selection import Candidate


def _reachable(items: list[Candidate], cap: tuple[int, int]) -> set[tuple[int, int]]:
    totals = {(0, 0)}
    frontier = [(0, 0)]
    while frontier:
        t, v = frontier.pop()
        for c in items:
            nxt = (t + c.tflops, v + c.vram)
            if nxt[0] <= cap[0] and nxt[1] <= cap[1] and nxt not in totals:
                totals.add(nxt)
                frontier.append(nxt)
    return totals


@pytest.mark.parametrize("seed", range(3))
def test_tables_never_rule_out_a_reachable_total_and_are_exact_where_kept(seed: int) -> None:
    rng = random.Random(seed)
    count = KEPT_SUFFIXES + 12
    items = [Candidate(f"c{i}", rng.randint(2, 9) * 3, rng.randint(2, 9) * 2, 1) for i in range(count)]
    cap = (rng.randint(30, 60), rng.randint(20, 40))
    reach = Reach(items, *cap)
    for k in range(count + 1):
        truth = _reachable(items[k:], cap)
        for t in range(cap[0] + 1):
            for v in range(cap[1] + 1):
                answer = reach.possible(k, (t, v), (t, v))
                if (t, v) in truth:
                    assert answer, (k, t, v)
                elif k >= count - KEPT_SUFFIXES:
                    assert not answer, (k, t, v)
