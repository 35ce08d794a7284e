"""The agent's loops: discovery and pods (slow), enforcement (fast), and a clean exit.

Role: `Agent` wires the NVML port, the cluster port, the pod locator, the duty cycler (with its
guardian), the compute controller, the VRAM watch and the metrics. `run_slow_once` refreshes this
node's workers from its pods and publishes discovery; `tick` runs one enforcement tick; `run`
repeats both on their periods in two threads until `stop` is set. `close` always resumes every
stopped process (a SIGTERM handler in `serve` calls it; the guardian covers a SIGKILL — of the
agent's container too when it runs as the pod's guardian container, `guardian_fifo`).

Must not: hold decisions (the controller, the watch and discovery do) or parse CLI arguments.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from gpupool_incluster.agent.compute import ComputeController
from gpupool_incluster.agent.enforce import Enforcer, Outbox
from gpupool_incluster.agent.metrics import AgentMetrics
from gpupool_incluster.agent.nvml import Nvml, NvmlError
from gpupool_incluster.agent.ports import AgentCluster
from gpupool_incluster.agent.procs import CgroupLocator, PodLocator
from gpupool_incluster.agent.publish import Publisher
from gpupool_incluster.agent.throttle import DutyCycler, Guardian
from gpupool_incluster.agent.vram import VramWatch
from gpupool_incluster.agent.workers import Worker, holds_index_without_record, worker_from_pod

__all__ = ["Agent", "AgentOptions"]

log = logging.getLogger("gpupool.agent")


@dataclass(frozen=True, slots=True)
class AgentOptions:
    node: str
    pool: str | None = None
    compute_interval_s: float = 0.1
    memory_interval_s: float = 0.5
    discovery_interval_s: float = 5.0
    vram_policy: Literal["kill", "evict"] = "kill"
    vram_grace_samples: int = 2
    dry_run: bool = False
    guardian: bool = True
    guardian_fifo: Path | None = None  # the pod's guardian container; None: a child guardian

    def __post_init__(self) -> None:
        if not self.node:
            raise ValueError("the agent needs its node's name")
        for name in ("compute_interval_s", "memory_interval_s", "discovery_interval_s"):
            value = getattr(self, name)
            if not 0.01 <= value <= 3600:
                raise ValueError(
                    f"{name.removesuffix('_s').replace('_', ' ')} {value}s must be within 10 ms … 1 h"
                )


class Agent:
    def __init__(
        self,
        options: AgentOptions,
        *,
        nvml: Nvml,
        cluster: AgentCluster,
        locator: PodLocator | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.options = options
        self.nvml = nvml
        self.cluster = cluster
        self.clock = clock
        self.metrics = AgentMetrics()
        self.guardian = Guardian(options.guardian_fifo) if options.guardian and not options.dry_run else None
        self.cycler = DutyCycler(
            period_s=options.compute_interval_s, guardian=self.guardian, dry_run=options.dry_run
        )
        self.outbox = Outbox()
        self.publisher = Publisher(options.node, nvml, cluster, pool=options.pool)
        self.enforcer = Enforcer(
            node=options.node,
            nvml=nvml,
            cluster=cluster,
            locator=locator or CgroupLocator(),
            controller=ComputeController(self.cycler),
            vram=VramWatch(policy=options.vram_policy, grace_samples=options.vram_grace_samples),
            metrics=self.metrics,
            outbox=self.outbox,
            memory_interval_s=options.memory_interval_s,
            dry_run=options.dry_run,
        )
        self.workers: dict[str, Worker] = {}
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._leftovers_checked = False
        # Called after each discovery with the usable GPUs (object name → UUID): the device plugin.
        self.on_discovery: list[Callable[[dict[str, str]], None]] = []

    # ---- one round of each loop ---------------------------------------------------------------
    def run_slow_once(self) -> None:
        workers: dict[str, Worker] = {}
        unrecorded: dict[str, tuple[str, str]] = {}
        for pod in self.cluster.node_pods(self.options.node):
            worker, problem = worker_from_pod(pod, self.options.node)
            if problem:
                action = "worker-unrecorded" if worker is None else "worker-disagrees"
                log.warning(problem, extra={"action": action, "node": self.options.node})
            if worker is not None:
                workers[worker.uid] = worker
            elif holds_index_without_record(pod):
                unrecorded[pod.metadata.uid or ""] = (
                    pod.metadata.namespace or "default",
                    pod.metadata.name or "",
                )
        self.workers = workers
        self.enforcer.workers = workers
        self.enforcer.unrecorded = unrecorded
        self.enforcer.gpu_tflops = self.publisher.publish(workers.values(), self.clock())
        usable = self.publisher.usable_gpus()
        for uuid, (device, ok) in self.publisher.device_states().items():
            self.metrics.gpu_usable.labels(self.options.node, uuid).set(1 if ok else 0)
            self.metrics.gpu_memory_total.labels(self.options.node, uuid).set(device.memory_total)
        for listener in self.on_discovery:
            listener(usable)
        if not self._leftovers_checked:
            self.enforcer.resume_leftovers()
            self._leftovers_checked = True

    def tick(self) -> None:
        self.enforcer.tick(time.monotonic())

    # ---- the loops -----------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Run until `stop` is set, then close (resuming everything)."""
        self.cycler.start()
        slow = threading.Thread(
            target=self._repeat,
            args=(stop, self.options.discovery_interval_s, self.run_slow_once),
            name="gpupool-agent-discovery",
            daemon=True,
        )
        slow.start()
        self._threads.append(slow)
        try:
            self._repeat(stop, self.options.compute_interval_s, self.tick)
        finally:
            self.close()

    @staticmethod
    def _repeat(stop: threading.Event, period: float, step: Callable[[], None]) -> None:
        next_at = time.monotonic()
        while not stop.is_set():
            try:
                step()
            except NvmlError as exc:
                log.error("NVML: %s", exc, extra={"action": "nvml-error"})
            except Exception as exc:
                log.exception("agent loop failed: %s", exc, extra={"action": "loop-error"})
            next_at += period
            next_at = max(next_at, time.monotonic())
            stop.wait(next_at - time.monotonic())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.enforcer.controller.close()
        self.cycler.close()
        if self.guardian is not None:
            self.guardian.close()
        self.outbox.close()
        self.nvml.close()
