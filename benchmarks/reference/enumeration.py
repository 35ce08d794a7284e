"""Reference solver for small problems: try every count vector, keep the best.

Role: the obviously-correct check for problems of a few items and nodes: every vector of counts
with at most `max_nodes` nodes, under the caps, ordered by most coverage, then least cost, then
fewest nodes, then the sorted names of the nodes (the planner's full order of objectives, so
the unit tests can compare tie-breaks too). Independent of the planner: see `problem`.

Must not: be used on problems with more than a handful of items (it is exponential).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from benchmarks.reference.problem import Answer, Item, Problem

__all__ = ["enumerate_best", "select_by_enumeration"]


def enumerate_best(problem: Problem) -> Answer:
    """The best answer by the full order of objectives (the empty answer when there is no need)."""
    items = problem.items
    empty = Answer.of(problem, [0] * len(items))
    if problem.need_tflops <= 0 and problem.need_vram <= 0:
        return empty
    best, best_key = empty, None
    for counts in itertools.product(range(problem.max_nodes + 1), repeat=len(items)):
        if sum(counts) > problem.max_nodes:
            continue
        answer = Answer.of(problem, counts)
        if problem.cap_tflops is not None and answer.tflops > problem.cap_tflops:
            continue
        if problem.cap_vram is not None and answer.vram > problem.cap_vram:
            continue
        names = tuple(sorted(i.name for i, n in zip(items, counts, strict=True) for _ in range(n)))
        key = (-answer.coverage, answer.cost, answer.nodes, names)
        if best_key is None or key < best_key:
            best, best_key = answer, key
    return best


def select_by_enumeration(
    candidates: Sequence[Item],
    *,
    need_tflops: int,
    need_vram: int,
    cap_tflops: int | None = None,
    cap_vram: int | None = None,
    max_nodes: int = 100,
) -> Answer:
    """`enumerate_best` with the planner's keyword arguments (needs below 0 count as 0)."""
    problem = Problem(
        list(candidates), max(need_tflops, 0), max(need_vram, 0), cap_tflops, cap_vram, max_nodes
    )
    return enumerate_best(problem)
