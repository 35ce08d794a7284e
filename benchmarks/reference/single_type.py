"""TensorFusion's selection rule, kept for comparison: one offering × N, the cheapest total.

Role: the baseline `benchmarks/plan_cost.py` measures the exact mix against (TensorFusion picks
one instance type and launches N of it), under the same caps and node limit. Every plan it finds
is also a candidate of the exact search, which therefore is never dearer.

Must not: be used to plan, or import gpupool (see `problem`).
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.reference.problem import Answer, Item, Problem

__all__ = ["select_single_type", "single_type"]


def single_type(problem: Problem) -> Answer | None:
    """One item × N covering the need, cheapest total (then fewest nodes, then name); None if none fits."""
    need_t, need_v = max(problem.need_tflops, 0), max(problem.need_vram, 0)
    best: tuple[int, int, str] | None = None
    chosen: Answer | None = None
    for index, item in enumerate(problem.items):
        count = max(-(-need_t // item.tflops), -(-need_v // item.vram))
        fits_t = problem.cap_tflops is None or count * item.tflops <= problem.cap_tflops
        fits_v = problem.cap_vram is None or count * item.vram <= problem.cap_vram
        if count > problem.max_nodes or not (fits_t and fits_v):
            continue
        key = (count * item.price, count, item.name)
        if best is None or key < best:
            counts = [0] * len(problem.items)
            counts[index] = count
            best, chosen = key, Answer.of(problem, counts)
    return chosen


def select_single_type(
    candidates: Sequence[Item],
    *,
    need_tflops: int,
    need_vram: int,
    cap_tflops: int | None = None,
    cap_vram: int | None = None,
    max_nodes: int = 100,
) -> Answer | None:
    return single_type(Problem(list(candidates), need_tflops, need_vram, cap_tflops, cap_vram, max_nodes))
