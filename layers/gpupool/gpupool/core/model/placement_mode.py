"""The placement modes, defined once: the allocator places by them, the models and the CLI name them.

Role: `PlacementMode` (a SchedulingConfigTemplate's `placement.mode`, the relay's
`--placement-mode`) and `PLACEMENT_MODES`, their names in order. Standard library only, so the CLI
can offer the choices without importing the models.

Must not: import pydantic or any other gpupool module, or say how a mode scores (the allocator does).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["PLACEMENT_MODES", "PlacementMode"]


class PlacementMode(StrEnum):
    """Placement modes (SchedulingConfigTemplate `placement.mode`): TensorFusion's three, plus ours;
    the one list of them (the allocator places by it, the CLI offers it).

    FragmentationAware places each pod where it grows the expected fragmentation of the cluster,
    measured against the recent mix of requests, the least; BalancedFit is Best-fit that keeps
    nodes' CPU and memory in step with their free GPUs and leaves GPU leftovers the recent
    requests can still use (see docs/placement.md).
    """

    COMPACT_FIRST = "CompactFirst"
    LOW_LOAD_FIRST = "LowLoadFirst"
    NODE_COMPACT_GPU_LOW_LOAD = "NodeCompactGPULowLoad"
    FRAGMENTATION_AWARE = "FragmentationAware"
    BALANCED_FIT = "BalancedFit"


PLACEMENT_MODES: tuple[str, ...] = tuple(mode.value for mode in PlacementMode)
