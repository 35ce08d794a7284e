"""Placement simulation (pure): replay a GPU-sharing trace (openb) through the allocator per mode.

See docs/placement.md for the protocol and the measure. The trace is read by `gpupool.simulation.openb`;
files are opened by `gpupool simulate placement`.
"""

from gpupool.simulation.placement.gpu_specs import DEFAULT_SPEC, GpuSpec, catalog_specs, spec_for
from gpupool.simulation.placement.replay import (
    PLACEMENTS,
    PROTOCOLS,
    Arrival,
    Assignment,
    ModeResult,
    arrivals,
    replay,
)

__all__ = [
    "DEFAULT_SPEC",
    "PLACEMENTS",
    "PROTOCOLS",
    "Arrival",
    "Assignment",
    "GpuSpec",
    "ModeResult",
    "arrivals",
    "catalog_specs",
    "replay",
    "spec_for",
]
