"""Fractional GPU allocator (pure): filter stages with reasons, placement scores, reserve/release.

The fit both products use: the capacity engine's consolidation (in the functions' layer) and the
GPU scheduler (`gpupool.scheduler`, in the relay) — so it lives in the core, below both.

See docs/scheduling.md for the placement modes and how oversubscription is handled.
"""

from gpupool.core.allocator.allocator import AllocationError, Allocator, FilterResult, Simulation, StageReport
from gpupool.core.allocator.records import Allocation, GpuInfo
from gpupool.core.allocator.request import (
    GpuRequest,
    MatchExpression,
    NodeConstraints,
    NodeSelectorTerm,
    Oversubscription,
    PlacementPolicy,
    QuotaLimits,
)
from gpupool.core.model.placement_mode import PlacementMode  # defined once, there

__all__ = [
    "Allocation",
    "AllocationError",
    "Allocator",
    "FilterResult",
    "GpuInfo",
    "GpuRequest",
    "MatchExpression",
    "NodeConstraints",
    "NodeSelectorTerm",
    "Oversubscription",
    "PlacementMode",
    "PlacementPolicy",
    "QuotaLimits",
    "Simulation",
    "StageReport",
]
