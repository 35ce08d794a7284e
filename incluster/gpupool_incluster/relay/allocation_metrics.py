"""The relay's allocation gauges: per GPU node, what the allocator holds as capacity, as still
available, and how many TensorFusion workers it placed there.

Role: `AllocationCollector(hub)`, a prometheus-client collector read at scrape time under the
hub's lock: the allocator's per-GPU TFLOPS and VRAM capacity and availability summed per
(node, pool) as `gpupool_node_tflops_capacity` / `gpupool_node_tflops_available` (TFLOPS),
`gpupool_node_vram_capacity_bytes` / `gpupool_node_vram_available_bytes`, and
`gpupool_node_workers` (allocations on the node). TensorFusion's NodeTFlops / NodeVRAM / Pool…
allocation alerts and EmptyGPU read the same facts from its `tf_node_metrics`; the chart's
PrometheusRule reads these (docs/alerts.md). `register(registry)` adds it once.

Must not: change allocator state beyond the layout `allocation_report` also builds, or decide
anything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from gpupool.core.allocator import Allocator

__all__ = ["ALLOCATION_METRICS", "AllocationCollector", "AllocationSource"]

_LABELS = ("node", "pool")
ALLOCATION_METRICS = {
    "gpupool_node_tflops_capacity": "TFLOPS of the node's GPUs the allocator knows",
    "gpupool_node_tflops_available": "TFLOPS of the node's GPUs not allocated",
    "gpupool_node_vram_capacity_bytes": "VRAM of the node's GPUs the allocator knows",
    "gpupool_node_vram_available_bytes": "VRAM of the node's GPUs not allocated",
    "gpupool_node_workers": "TensorFusion workers (allocations) placed on the node",
}


class AllocationSource(Protocol):
    """What the collector reads: the hub's lock and allocator (`SchedulerHub` is one)."""

    lock: threading.RLock
    allocator: Allocator


class AllocationCollector(Collector):
    def __init__(self, hub: AllocationSource) -> None:
        self.hub = hub

    def register(self, registry: CollectorRegistry) -> AllocationCollector:
        registry.register(self)
        return self

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families without samples (so registering never takes the hub's lock)."""
        for name, documentation in ALLOCATION_METRICS.items():
            yield GaugeMetricFamily(name, documentation, labels=_LABELS)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        totals: dict[tuple[str, str], list[int]] = {}
        with self.hub.lock:
            state = self.hub.allocator.state
            state.ensure_layout()
            for name, slot in state.slot_of.items():
                info = state.gpus[name]
                row = totals.setdefault((info.node, info.pool), [0, 0, 0, 0, 0])
                row[0] += int(state.cap_t[slot])
                row[1] += int(state.avail_t[slot])
                row[2] += int(state.cap_v[slot])
                row[3] += int(state.avail_v[slot])
            pools = dict(totals.keys())  # node → its GPUs' pool
            for allocation in state.allocations.values():
                pool = pools.get(allocation.node)
                if pool is not None:
                    totals[(allocation.node, pool)][4] += 1
        families = {
            name: GaugeMetricFamily(name, documentation, labels=_LABELS)
            for name, documentation in ALLOCATION_METRICS.items()
        }
        for (node, pool), (cap_t, avail_t, cap_v, avail_v, workers) in sorted(totals.items()):
            labels = [node, pool]
            families["gpupool_node_tflops_capacity"].add_metric(labels, cap_t / 1000)  # milli-TFLOPS
            families["gpupool_node_tflops_available"].add_metric(labels, avail_t / 1000)
            families["gpupool_node_vram_capacity_bytes"].add_metric(labels, cap_v)
            families["gpupool_node_vram_available_bytes"].add_metric(labels, avail_v)
            families["gpupool_node_workers"].add_metric(labels, workers)
        yield from families.values()
