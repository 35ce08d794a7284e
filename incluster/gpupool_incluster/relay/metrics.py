"""The relay's Prometheus metrics (prometheus-client), one registry per relay.

Role: counters for events seen / delivered / failed (every failed attempt, by the answer: `401`,
`503`, `connection`, …) / dropped (by reason: `queue-full` before any attempt, and the dead letters
`rejected` and `attempts`), the delivery latency histogram (from the Kubernetes change to the
function's 2xx), queue depth (fresh events) and events waiting for a retry, watch restarts,
request latency of the extender / webhook / API routes, and pods
the extender's filter found no node for (by pool: TensorFusion's WorkerAllocationFailed reads the
same count). `watch_allocation(hub)` adds the per-node allocation gauges (`allocation_metrics`).
`render()` is the `/metrics` body. A private registry per `RelayMetrics` keeps several relays in
one process (tests) apart.

Must not: decide anything or log.
"""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from gpupool_incluster.relay.allocation_metrics import AllocationCollector, AllocationSource

__all__ = ["CONTENT_TYPE", "RelayMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120)
_REQUEST_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


class RelayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ("type", "function")
        self.events_seen = Counter(
            "gpupool_relay_events_seen",
            "Relay events produced from Kubernetes changes",
            labels,
            registry=self.registry,
        )
        self.events_delivered = Counter(
            "gpupool_relay_events_delivered",
            "Deliveries the function accepted",
            labels,
            registry=self.registry,
        )
        self.events_failed = Counter(
            "gpupool_relay_delivery_failures",
            "Delivery attempts that failed (retried or not)",
            (*labels, "reason"),
            registry=self.registry,
        )
        self.events_dropped = Counter(
            "gpupool_relay_events_dropped",
            "Events given up: out of a full queue, dead-lettered (rejected, attempts), or no --forward",
            (*labels, "reason"),
            registry=self.registry,
        )
        self.events_coalesced = Counter(
            "gpupool_relay_events_coalesced",
            "Events folded into another delivery by a batching window",
            labels,
            registry=self.registry,
        )
        self.delivery_latency = Histogram(
            "gpupool_relay_delivery_latency_seconds",
            "From the watched change to the function's acceptance",
            ("function",),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "gpupool_relay_queue_depth", "Events waiting for delivery", ("function",), registry=self.registry
        )
        self.retrying = Gauge(
            "gpupool_relay_retrying",
            "Events that failed at least once and wait for their next attempt",
            ("function",),
            registry=self.registry,
        )
        self.watch_restarts = Counter(
            "gpupool_relay_watch_restarts",
            "Watches re-listed after an error or 410 Gone",
            ("kind", "reason"),
            registry=self.registry,
        )
        self.request_latency = Histogram(
            "gpupool_relay_request_latency_seconds",
            "Extender, webhook and API request latency",
            ("route",),
            buckets=_REQUEST_BUCKETS,
            registry=self.registry,
        )
        self.leader = Gauge(
            "gpupool_relay_leader", "1 while this replica forwards events", registry=self.registry
        )
        self.allocation_failures = Counter(
            "gpupool_relay_allocation_failures",
            "Filter calls that left a GPU pod no node (kube-scheduler retries count again), by the filter "
            "stage most nodes were lost at",
            ("pool", "reason"),
            registry=self.registry,
        )

    def watch_allocation(self, hub: AllocationSource) -> None:
        """Serve the hub's per-node allocation gauges on this registry (once per relay)."""
        AllocationCollector(hub).register(self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
