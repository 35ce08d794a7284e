"""Placement policies, one per mode, found through one registry.

Role: `Placer` — what the allocator asks a policy: `node_scores(state, alive, shape)` (the
extender's prioritize), `choose(state, alive, shape)` (the node row and GPU slots a reservation
takes) and `record(shape)` (learn from every reservation, whatever the pod's mode);
`ScoredPlacer(node_order, gpu_order)` — TensorFusion's three modes on the per-GPU scores
(`scoring`), each the score order it ranks nodes by and the one it ranks their GPUs by, learning
nothing; `PLACERS` — each `PlacementMode` → how to make its placer. An allocator makes one of each
(the learning ones, FragmentationAware and BalancedFit, keep their demand windows as long as it
lives). A new policy is its module and one line in `PLACERS`.

Must not: hold allocation state, or choose a mode (pools and the policy do: `Allocator.mode_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.balanced_fit import BalancedFitScorer
from gpupool.core.allocator.fragmentation import FragmentationScorer
from gpupool.core.allocator.mix import RequestShape
from gpupool.core.allocator.scoring import ScoreOrder, node_scores, select_gpus, select_node
from gpupool.core.allocator.state import AllocatorState
from gpupool.core.model.placement_mode import PlacementMode

__all__ = ["PLACERS", "Placer", "ScoredPlacer"]

B = npt.NDArray[np.bool_]
F64 = npt.NDArray[np.float64]


class Placer(Protocol):
    def node_scores(self, state: AllocatorState, alive: B, shape: RequestShape) -> F64:
        """A score per node row over its surviving GPU slots (NaN for a row with none)."""
        ...

    def choose(self, state: AllocatorState, alive: B, shape: RequestShape) -> tuple[int, list[int]] | None:
        """The node row and GPU slots the pod takes among the surviving ones (None: none fits)."""
        ...

    def record(self, shape: RequestShape) -> None:
        """Learn from a reservation of `shape` (every one the allocator makes, whatever the pod's
        mode, so a pool switched to this policy starts warm); a policy that does not learn ignores it."""
        ...


@dataclass(frozen=True, slots=True)
class ScoredPlacer:
    """CompactFirst, LowLoadFirst, NodeCompactGPULowLoad: the best node by its GPUs' mean
    `node_order` score, then its best GPUs by `gpu_order` (`scoring`)."""

    node_order: ScoreOrder
    gpu_order: ScoreOrder

    def node_scores(self, state: AllocatorState, alive: B, shape: RequestShape) -> F64:
        return node_scores(state, alive, self.node_order)

    def choose(self, state: AllocatorState, alive: B, shape: RequestShape) -> tuple[int, list[int]] | None:
        row = select_node(state, alive, self.node_order)
        if row is None:
            return None
        return row, select_gpus(state, alive, row, shape.gpu_count, self.gpu_order)

    def record(self, shape: RequestShape) -> None:
        """The scores are the GPUs' own: nothing to learn."""


_COMPACT_FIRST = ScoredPlacer(node_order="compact", gpu_order="compact")  # node and GPU: most used
_LOW_LOAD_FIRST = ScoredPlacer(node_order="low_load", gpu_order="low_load")  # node and GPU: most free
_NODE_COMPACT_GPU_LOW_LOAD = ScoredPlacer(node_order="compact", gpu_order="low_load")

# How to make each mode's placer, once per allocator (a new policy: its module and one line here).
PLACERS: dict[PlacementMode, Callable[[], Placer]] = {
    PlacementMode.COMPACT_FIRST: lambda: _COMPACT_FIRST,
    PlacementMode.LOW_LOAD_FIRST: lambda: _LOW_LOAD_FIRST,
    PlacementMode.NODE_COMPACT_GPU_LOW_LOAD: lambda: _NODE_COMPACT_GPU_LOW_LOAD,
    PlacementMode.FRAGMENTATION_AWARE: FragmentationScorer,
    PlacementMode.BALANCED_FIT: BalancedFitScorer,
}
