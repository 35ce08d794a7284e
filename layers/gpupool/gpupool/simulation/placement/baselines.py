"""Baseline placement rules for the simulator: Random-fit and Best-fit, side by side with the modes.

Role: choosers the allocator accepts in place of a mode's choice (`Allocator.reserve(chooser=)`),
picking among the GPU slots that survived every filter stage:
- RandomFit: a node drawn uniformly among those that can take the pod, then GPUs drawn there.
- BestFit: the node with the least free GPU capacity (in GPUs: free TFLOPS / capacity, summed),
  then its tightest GPUs (least free first). Ties go to the first node and GPU in the state's
  order, as in the modes.

Must not: filter, mutate the allocator's state, or be offered as a pool's placement mode.
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator import GpuRequest
from gpupool.core.allocator.rows import row_any, row_sum
from gpupool.core.allocator.state import AllocatorState

__all__ = ["BASELINES", "BestFit", "RandomFit"]

B = npt.NDArray[np.bool_]


def _free_fraction(state: AllocatorState) -> npt.NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        free: npt.NDArray[np.float64] = np.where(
            state.valid & (state.cap_t > 0), state.avail_t / np.maximum(state.cap_t, 1), 0.0
        )
    return free


class RandomFit:
    """Uniformly random among feasible nodes, then among feasible GPUs; seeded."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, state: AllocatorState, alive: B, request: GpuRequest) -> tuple[int, list[int]] | None:
        rows = np.flatnonzero(row_any(alive))
        if not rows.size:
            return None
        row = int(rows[self.rng.randrange(rows.size)])
        columns = np.flatnonzero(alive[row]).tolist()
        chosen = sorted(self.rng.sample(columns, request.gpu_count))
        return row, [row * alive.shape[1] + c for c in chosen]


class BestFit:
    """The feasible node with the least free GPU capacity, then its tightest feasible GPUs."""

    def __call__(self, state: AllocatorState, alive: B, request: GpuRequest) -> tuple[int, list[int]] | None:
        feasible = row_any(alive)
        if not feasible.any():
            return None
        rows, width = alive.shape
        free = _free_fraction(state).reshape(rows, width)
        node_free = np.where(feasible, row_sum(free, state.valid.reshape(rows, width)), np.inf)
        row = int(np.argmin(node_free))
        gpu_free = np.where(alive[row], free[row], np.inf)
        columns = np.argsort(gpu_free, kind="stable")[: request.gpu_count].tolist()
        return row, [row * width + c for c in columns]


BASELINES = ("RandomFit", "BestFit")
