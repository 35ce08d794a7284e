"""Where each placement mode puts a task without GPUs in the replay, found through one registry.

Role: `HOST_ONLY` — a `PlacementMode` → its rule for a task that asks for no GPU, given the
candidate nodes (`listed`, in the seeded order) and each one's CPU and memory left after the task
(`left`, as fractions of the node's, summed). gpupool's extender never sees such pods, so in a real
cluster kube-scheduler places them: `least_allocated`, the rule of every mode not listed (and of
every rule under the `least-allocated` protocol). FragmentationAware places them where they add the
least expected fragmentation, BalancedFit where they strand the fewest GPUs (docs/placement.md). A
new mode is its placer (`core/allocator/placers.PLACERS`) and, only if it places such tasks its own
way, its rule and one line here.

Must not: book the placement (the replay does), or change the allocator's state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator import Allocator, PlacementMode
from gpupool.core.allocator.mix import RequestShape
from gpupool.simulation.openb import TraceTask
from gpupool.simulation.placement.measure import ClusterBooks

__all__ = ["HOST_ONLY", "HostOnlyCluster", "HostOnlyRule", "host_only_rule", "least_allocated"]

MIB = 1 << 20
Rows = npt.NDArray[np.int64]
Values = npt.NDArray[np.float64]


class HostOnlyCluster(Protocol):
    """What a rule reads of the replay's cluster."""

    @property
    def allocator(self) -> Allocator: ...
    @property
    def books(self) -> ClusterBooks: ...
    def per_node(self, by_allocator_row: npt.NDArray[np.generic]) -> Values:
        """A per-allocator-row value per trace row (0 for a node without GPUs)."""
        ...


# (cluster, listed, left, task) → the trace row the task takes
HostOnlyRule = Callable[[HostOnlyCluster, Rows, Values, TraceTask], int]


def least_allocated(cluster: HostOnlyCluster, listed: Rows, left: Values, task: TraceTask) -> int:
    """kube-scheduler's LeastAllocated: the most CPU and memory left; ties to the first listed."""
    return int(listed[int(np.argmax(left))])


def _fragmentation_aware(cluster: HostOnlyCluster, listed: Rows, left: Values, task: TraceTask) -> int:
    """The least expected fragmentation added, then LeastAllocated."""
    allocator = cluster.allocator
    request = RequestShape(gpu_count=0, cpu_milli=task.cpu_milli, memory=task.memory_mib * MIB)
    delta = cluster.per_node(allocator.fragmentation.node_deltas_without_gpu(allocator.state, request))[
        listed
    ]
    return int(listed[int(np.lexsort((-left, delta))[0])])


def _balanced_fit(cluster: HostOnlyCluster, listed: Rows, left: Values, task: TraceTask) -> int:
    """The fewest GPUs stranded, then the least free GPUs, then the least CPU left."""
    allocator = cluster.allocator
    stranded, free = allocator.balanced.host_only_keys(allocator.state, task.cpu_milli, task.memory_mib * MIB)
    keys = (
        cluster.books.cpu_free[listed],
        cluster.per_node(free)[listed],
        cluster.per_node(stranded)[listed],
    )
    return int(listed[int(np.lexsort(keys)[0])])


# The modes that place tasks without GPUs their own way (every other mode: `least_allocated`).
HOST_ONLY: dict[PlacementMode, HostOnlyRule] = {
    PlacementMode.FRAGMENTATION_AWARE: _fragmentation_aware,
    PlacementMode.BALANCED_FIT: _balanced_fit,
}


def host_only_rule(mode: PlacementMode) -> HostOnlyRule:
    return HOST_ONLY.get(mode, least_allocated)
