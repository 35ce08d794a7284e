"""Placement scores: per GPU `round(vramWeight·v + tflopsWeight·t)` in 0..100, node = mean of its GPUs.

Role: rank the nodes and GPUs that survived the filters by one of the two per-GPU scores
(`ScoreOrder`): "compact" (most used first) or "low_load" (most free first); each scored mode
(`placers.ScoredPlacer`) names the order it ranks nodes by and the one it ranks a node's GPUs by.
A node's score is the mean over its GPUs that passed the filters. Ties go to the node (and GPU)
that sorts first by name (index), so placement is deterministic.

Must not: filter, mutate state, format reasons, or know a placement mode's name (`placers` does).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.rows import row_count, row_sum
from gpupool.core.allocator.state import AllocatorState

__all__ = ["ScoreOrder", "node_scores", "select_gpus", "select_node", "to_extender_priority"]

B = npt.NDArray[np.bool_]
F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]
ScoreOrder = Literal["compact", "low_load"]


def _scores(state: AllocatorState, order: ScoreOrder) -> F32:
    return state.score_compact if order == "compact" else state.score_low_load


def _means(state: AllocatorState, alive: B, order: ScoreOrder, empty: float) -> F64:
    """Mean GPU score per node over its surviving GPUs; `empty` for nodes with none."""
    rows = alive.shape[0]
    scores = _scores(state, order).reshape(rows, alive.shape[1])
    counts = row_count(alive)
    totals = row_sum(scores, alive)
    means: F64 = np.where(counts > 0, totals / np.maximum(counts, 1), empty)
    return means


def node_scores(state: AllocatorState, alive: B, order: ScoreOrder) -> F64:
    """Mean GPU score per node over its surviving GPUs; NaN for nodes with none."""
    return _means(state, alive, order, np.nan)


def select_node(state: AllocatorState, alive: B, order: ScoreOrder) -> int | None:
    """Row of the best node (the first of equals), or None when no node survived."""
    if not alive.any():
        return None
    return int(np.argmax(_means(state, alive, order, -np.inf)))  # scores are 0..100, never −inf


def select_gpus(state: AllocatorState, alive: B, row: int, count: int, order: ScoreOrder) -> list[int]:
    """Slots of the `count` best surviving GPUs on one node."""
    width = alive.shape[1]
    start = row * width
    scores = _scores(state, order)[start : start + width]
    columns = [c for c in np.argsort(-scores, kind="stable").tolist() if alive[row, c]]
    return [start + c for c in columns[:count]]


def to_extender_priority(score: float) -> int:
    """0..100 → kube-scheduler's extender range 0..10 (MaxExtenderPriority), half away from zero."""
    if score != score:  # NaN: the node has no fitting GPU
        return 0
    return max(0, min(10, int(np.floor(score / 10.0 + 0.5))))
