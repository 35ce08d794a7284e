"""The agent's Prometheus metrics: TensorFusion's `tf_gpu_usage` / `tf_worker_usage` equivalents.

Role: one registry per agent with per-GPU gauges (SM %, memory used and total, usable) and
per-worker gauges and counters (SM %, memory, compute target, VRAM limit, throttled seconds,
kills, evictions), labelled like TensorFusion's series (node, gpu uuid; namespace, worker). Served
on `/metrics` by `metrics_http.MetricsServer`, to the callers its `access` allows.

Must not: compute anything the loops did not already measure.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from gpupool_incluster.agent.metrics_http import MetricsAccess, MetricsServer

__all__ = ["AgentMetrics"]


class AgentMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        gpu = ("node", "uuid")
        worker = ("node", "namespace", "worker", "uuid")
        self.gpu_compute = Gauge(
            "tf_gpu_usage_compute_percentage", "SM utilisation of the GPU", gpu, registry=r
        )
        self.gpu_memory = Gauge("tf_gpu_usage_memory_bytes", "VRAM used on the GPU", gpu, registry=r)
        self.gpu_memory_total = Gauge("tf_gpu_memory_total_bytes", "VRAM of the GPU", gpu, registry=r)
        self.gpu_usable = Gauge(
            "tf_gpu_usable", "1 when the GPU is usable, 0 when missing or failed", gpu, registry=r
        )
        self.worker_compute = Gauge(
            "tf_worker_usage_compute_percentage",
            "SM utilisation of the worker on the GPU",
            worker,
            registry=r,
        )
        self.worker_memory = Gauge(
            "tf_worker_usage_memory_bytes", "VRAM the worker holds", worker, registry=r
        )
        self.worker_compute_limit = Gauge(
            "tf_worker_compute_limit_percentage", "SM share the worker is held to", worker, registry=r
        )
        self.worker_vram_limit = Gauge(
            "tf_worker_vram_limit_bytes", "the worker's vram-limit", worker, registry=r
        )
        self.worker_throttled = Counter(
            "tf_worker_throttled_seconds",
            "time the worker's processes spent stopped",
            ("node", "namespace", "worker"),
            registry=r,
        )
        self.worker_kills = Counter(
            "tf_worker_vram_kills",
            "processes killed for exceeding vram-limit",
            ("node", "namespace", "worker"),
            registry=r,
        )
        self.worker_evictions = Counter(
            "tf_worker_vram_evictions",
            "pods evicted for exceeding vram-limit",
            ("node", "namespace", "worker"),
            registry=r,
        )
        self.actions = Counter(
            "tf_agent_actions", "enforcement actions by kind", ("node", "action"), registry=r
        )

    def serve(self, host: str, port: int, *, access: MetricsAccess | None) -> int:
        """Serve /metrics on host:port (0: any free port) in a daemon thread, to the callers
        `access` allows (None: to anyone); the bound port."""
        return MetricsServer(self.registry, access=access).start(host, port)
