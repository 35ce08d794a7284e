"""TensorFusion's selection rule, kept for comparison: one offering × N, the cheapest total.

Role: the baseline `benchmarks/plan_cost.py` measures the exact mix against (TensorFusion picks
one instance type and launches N of it). Same inputs and limits as `select_cheapest`, so every
plan it finds is also a candidate of the exact search, which therefore is never dearer.

Must not: be used to plan; gpupool plans with `selection.select_cheapest`.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupool.core.planning.cheapest import DEFAULT_MAX_NODES
from gpupool.core.planning.selection import Candidate, Selection, build_selection, ceil_div

__all__ = ["select_single_type"]


def select_single_type(
    candidates: Sequence[Candidate],
    *,
    need_tflops: int,
    need_vram: int,
    cap_tflops: int | None = None,
    cap_vram: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Selection | None:
    """TensorFusion's rule: one candidate × N covering the need, cheapest total; None if none fits."""
    need_t, need_v = max(need_tflops, 0), max(need_vram, 0)
    best: tuple[int, int, str] | None = None
    chosen: Selection | None = None
    for c in candidates:
        count = max(ceil_div(need_t, c.tflops), ceil_div(need_v, c.vram))
        fits_t = cap_tflops is None or count * c.tflops <= cap_tflops
        fits_v = cap_vram is None or count * c.vram <= cap_vram
        if count > max_nodes or not (fits_t and fits_v):
            continue
        key = (count * c.price, count, c.name)
        if best is None or key < best:
            best, chosen = key, build_selection([c], [count], need_t, need_v)
    return chosen
