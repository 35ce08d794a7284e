"""Placement policies, one per mode, found through one registry.

Role: `Placer` — what the allocator asks a policy: `node_scores(state, alive, shape)` (the
extender's prioritize) and `choose(state, alive, shape)` (the node row and GPU slots a reservation
takes); `ScoredPlacer(node_order, gpu_order)` — TensorFusion's three modes on the per-GPU scores
(`scoring`), each the score order it ranks nodes by and the one it ranks their GPUs by;
`PLACERS` — each `PlacementMode` → the placer an allocator uses for it (the learning ones,
FragmentationAware and BalancedFit, are the allocator's own objects: their demand windows live as
long as it does). A new policy is its module and one line in `PLACERS`.

Must not: hold allocation state, or choose a mode (pools and the policy do: `Allocator.mode_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.mix import RequestShape
from gpupool.core.allocator.scoring import ScoreOrder, node_scores, select_gpus, select_node
from gpupool.core.allocator.state import AllocatorState
from gpupool.core.model.placement_mode import PlacementMode

__all__ = ["PLACERS", "Placer", "PlacerOwner", "ScoredPlacer"]

B = npt.NDArray[np.bool_]
F64 = npt.NDArray[np.float64]


class Placer(Protocol):
    def node_scores(self, state: AllocatorState, alive: B, shape: RequestShape) -> F64:
        """A score per node row over its surviving GPU slots (NaN for a row with none)."""
        ...

    def choose(self, state: AllocatorState, alive: B, shape: RequestShape) -> tuple[int, list[int]] | None:
        """The node row and GPU slots the pod takes among the surviving ones (None: none fits)."""
        ...


class PlacerOwner(Protocol):
    """What owns the learning placers (the allocator: their windows live as long as it does)."""

    @property
    def fragmentation(self) -> Placer: ...
    @property
    def balanced(self) -> Placer: ...


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


_COMPACT_FIRST = ScoredPlacer(node_order="compact", gpu_order="compact")  # node and GPU: most used
_LOW_LOAD_FIRST = ScoredPlacer(node_order="low_load", gpu_order="low_load")  # node and GPU: most free
_NODE_COMPACT_GPU_LOW_LOAD = ScoredPlacer(node_order="compact", gpu_order="low_load")

# The placer of each mode, for an allocator (a new policy: its module and one line here).
PLACERS: dict[PlacementMode, Callable[[PlacerOwner], Placer]] = {
    PlacementMode.COMPACT_FIRST: lambda _: _COMPACT_FIRST,
    PlacementMode.LOW_LOAD_FIRST: lambda _: _LOW_LOAD_FIRST,
    PlacementMode.NODE_COMPACT_GPU_LOW_LOAD: lambda _: _NODE_COMPACT_GPU_LOW_LOAD,
    PlacementMode.FRAGMENTATION_AWARE: lambda owner: owner.fragmentation,
    PlacementMode.BALANCED_FIT: lambda owner: owner.balanced,
}
