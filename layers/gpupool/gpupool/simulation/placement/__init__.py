"""Placement simulation (pure): replay a GPU-sharing trace (openb) through the allocator per mode.

See docs/placement.md for the protocol and the measure. Files are read by `gpupool simulate placement`.
"""

from gpupool.simulation.placement.gpu_specs import DEFAULT_SPEC, GpuSpec, catalog_specs, spec_for
from gpupool.simulation.placement.replay import PLACEMENTS, Arrival, Assignment, ModeResult, arrivals, replay
from gpupool.simulation.placement.trace import (
    TraceError,
    TraceNode,
    TraceTask,
    arrival_order,
    parse_nodes,
    parse_tasks,
)

__all__ = [
    "DEFAULT_SPEC",
    "PLACEMENTS",
    "Arrival",
    "Assignment",
    "GpuSpec",
    "ModeResult",
    "TraceError",
    "TraceNode",
    "TraceTask",
    "arrival_order",
    "arrivals",
    "catalog_specs",
    "parse_nodes",
    "parse_tasks",
    "replay",
    "spec_for",
]
