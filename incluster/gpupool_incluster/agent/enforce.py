"""One enforcement tick: NVML processes → pods → compute duty cycles and VRAM actions.

Role: every tick, list each GPU's compute processes, keep only those whose cgroup places them in a
worker pod (see `workers`), kill those in a pod that asks for a `tensor-fusion.ai/index_*` resource
without a valid record (`unrecorded`: the device plugin may have started it with another pod's
grant, see `deviceplugin.allocate`; any other process is never touched), feed the SM samples to the
`ComputeController`, and — every memory period, or at once while a VRAM violation awaits
confirmation — feed the VRAM use to `VramWatch` and apply its actions (kill the process after
re-checking it still belongs to the worker, or evict the pod; Events and evictions go through a
background outbox so a slow API server never delays the loop). Updates the metrics; `dry_run`
logs and counts every action without signalling or evicting.

Must not: decide targets or verdicts (the controller and the watch do), or write GPU objects.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from gpupool_incluster.agent.compute import ComputeController, WorkerOnGpu
from gpupool_incluster.agent.metrics import AgentMetrics
from gpupool_incluster.agent.nvml import GpuProcess, Nvml, NvmlError
from gpupool_incluster.agent.ports import AgentCluster
from gpupool_incluster.agent.procs import PodLocator
from gpupool_incluster.agent.vram import VramAction, VramUse, VramWatch
from gpupool_incluster.agent.workers import Worker, shares

__all__ = ["Enforcer", "Outbox"]

log = logging.getLogger("gpupool.agent")
Kill = Callable[[int, int], None]


class Outbox:
    """Cluster calls made off the enforcement thread, in order; failures are logged, not raised."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="gpupool-agent-outbox", daemon=True)
        self._thread.start()

    def put(self, call: Callable[[], None]) -> None:
        self._queue.put(call)

    def _run(self) -> None:
        while (call := self._queue.get()) is not None:
            try:
                call()
            except Exception as exc:
                log.warning("cluster call failed: %s", exc, extra={"action": "outbox-failed"})

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(5)


@dataclass(slots=True)
class Enforcer:
    node: str
    nvml: Nvml
    cluster: AgentCluster
    locator: PodLocator
    controller: ComputeController
    vram: VramWatch
    metrics: AgentMetrics
    outbox: Outbox
    memory_interval_s: float = 0.5
    dry_run: bool = False
    kill: Kill = os.kill
    workers: dict[str, Worker] = field(default_factory=dict)  # by pod UID, set by the runner
    # Pods asking for an index resource without a valid record, by UID: (namespace, name).
    unrecorded: dict[str, tuple[str, str]] = field(default_factory=dict)
    gpu_tflops: dict[str, Decimal | None] = field(default_factory=dict)  # by uuid, set by the runner
    _last_memory: float = float("-inf")
    _throttled: dict[str, float] = field(default_factory=dict)
    _since: dict[str, int] = field(default_factory=dict)
    _exported: dict[str, int] = field(
        default_factory=dict
    )  # controller actions already counted  # per GPU: NVML time of the newest sample seen

    def tick(self, now: float) -> None:
        """One compute tick at monotonic time `now` (and a memory check when due)."""
        placements: list[WorkerOnGpu] = []
        samples: dict[int, float] = {}
        memory: list[VramUse] = []
        check_memory = now - self._last_memory >= self.memory_interval_s or self.vram.suspects
        for uuid, tflops in list(self.gpu_tflops.items()):
            try:
                processes = self.nvml.compute_processes(uuid)
                util = self.nvml.process_utilization(
                    uuid, self._since.get(uuid, self.nvml.now_us() - 1_000_000)
                )
            except NvmlError:
                continue  # discovery marks the device; enforcement skips it
            self._stop_unrecorded(uuid, processes)
            owned = self._by_worker(processes)
            latest: dict[int, tuple[int, float]] = {}
            for sample in util:  # NVML may return several samples per process: keep the newest
                if sample.pid not in latest or sample.timestamp_us >= latest[sample.pid][0]:
                    latest[sample.pid] = (sample.timestamp_us, sample.sm_percent)
            if util:
                self._since[uuid] = max(sample.timestamp_us for sample in util)
            gpu_sm = sum(sm for _, sm in latest.values())
            samples.update({pid: sm for pid, (_, sm) in latest.items()})
            used_total = sum(p.used_memory or 0 for p in processes)
            self.metrics.gpu_compute.labels(self.node, uuid).set(min(100.0, gpu_sm))
            self.metrics.gpu_memory.labels(self.node, uuid).set(used_total)
            for worker, pids_memory in owned.items():
                request, limit = shares(worker, tflops)
                pids = frozenset(pid for pid, _ in pids_memory)
                placements.append(WorkerOnGpu(worker.uid, uuid, worker.rank, request, limit, pids))
                memory.append(VramUse(worker.key, uuid, worker.vram_limit, tuple(pids_memory)))
                labels = (self.node, worker.namespace, worker.name, uuid)
                self.metrics.worker_memory.labels(*labels).set(sum(m for _, m in pids_memory))
                self.metrics.worker_vram_limit.labels(*labels).set(worker.vram_limit)
        self.controller.step(placements, samples)
        for kind, count in self.controller.actions.items():
            delta = count - self._exported.get(kind, 0)
            if delta > 0:
                self.metrics.actions.labels(self.node, kind).inc(delta)
                self._exported[kind] = count
        self._export_compute(placements)
        if check_memory:
            self._last_memory = now
            for action in self.vram.check(memory):
                self._apply(action)

    def resume_leftovers(self, proc_root: Path = Path("/proc")) -> list[int]:
        """SIGCONT workers' GPU processes found stopped that this agent did not stop.

        A previous agent killed together with its guardian (its container restarted) may have
        left some stopped; run once at start, after the first discovery.
        """
        resumed = []
        mine = self.controller.cycler.stopped_pids()
        for uuid in list(self.gpu_tflops):
            try:
                processes = self.nvml.compute_processes(uuid)
            except NvmlError:
                continue
            for worker, pids_memory in self._by_worker(processes).items():
                for pid, _ in pids_memory:
                    if pid in mine or _state(proc_root, pid) != "T" or self.dry_run:
                        continue
                    try:
                        self.kill(pid, signal.SIGCONT)
                    except ProcessLookupError:
                        continue
                    resumed.append(pid)
                    why = "left stopped by a previous agent"
                    extra = {"action": "resume-leftover", "worker": worker.key}
                    log.warning("resumed process %s of worker %s %s", pid, worker.key, why, extra=extra)
        return resumed

    def _by_worker(self, processes: Sequence[GpuProcess]) -> dict[Worker, list[tuple[int, int]]]:
        owned: dict[Worker, list[tuple[int, int]]] = {}
        for process in processes:
            located = self.locator.locate(process.pid)
            worker = self.workers.get(located.pod_uid) if located else None
            if worker is not None:
                owned.setdefault(worker, []).append((process.pid, process.used_memory or 0))
        return owned

    def _stop_unrecorded(self, uuid: str, processes: Sequence[GpuProcess]) -> None:
        """SIGKILL every process on `uuid` of a pod in `unrecorded`: it holds GPUs no record gives it."""
        for process in processes:
            located = self.locator.locate(process.pid)
            pod = self.unrecorded.get(located.pod_uid) if located is not None else None
            if pod is None:
                continue
            key = "/".join(pod)
            self.metrics.actions.labels(self.node, "unrecorded-kill").inc()
            log.warning(
                "%spod %s uses GPU %s with no allocation recorded for it: process %s killed",
                "dry run: " if self.dry_run else "",
                key,
                uuid,
                process.pid,
                extra={"action": "unrecorded-kill", "pod": key, "gpu": uuid},
            )
            if self.dry_run:
                continue
            try:
                self.kill(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                continue

    def _export_compute(self, placements: list[WorkerOnGpu]) -> None:
        names = {w.uid: w for w in self.workers.values()}
        for placement in placements:
            worker = names[placement.key]
            reading = self.controller.readings.get(placement.key)
            labels = (self.node, worker.namespace, worker.name, placement.gpu)
            if reading is not None:
                self.metrics.worker_compute.labels(*labels).set(reading.measured)
                self.metrics.worker_compute_limit.labels(*labels).set(reading.target)
            total = self.controller.cycler.throttled_seconds(placement.key)
            delta = total - self._throttled.get(placement.key, 0.0)
            if delta > 0:
                self.metrics.worker_throttled.labels(self.node, worker.namespace, worker.name).inc(delta)
            self._throttled[placement.key] = total

    def _apply(self, action: VramAction) -> None:
        worker = next((w for w in self.workers.values() if w.key == action.key), None)
        if worker is None:
            return
        self.metrics.actions.labels(self.node, f"vram-{action.kind}").inc()
        level = logging.INFO if self.dry_run else logging.WARNING
        log.log(
            level,
            "%s%s",
            "dry run: " if self.dry_run else "",
            action.message,
            extra={"action": f"vram-{action.kind}", "worker": worker.key, "gpu": action.gpu},
        )
        involved = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": worker.name,
            "namespace": worker.namespace,
            "uid": worker.uid,
        }
        reason = {"warn": "VRAMLimitExceeded", "kill": "VRAMLimitKilled", "evict": "VRAMLimitEvicted"}[
            action.kind
        ]
        message = ("dry run: " if self.dry_run else "") + action.message
        self.outbox.put(
            lambda: self.cluster.record_event(
                involved=involved, reason=reason, message=message, kind="Warning"
            )
        )
        if self.dry_run or action.kind == "warn":
            return
        if action.kind == "kill" and action.pid is not None:
            located = self.locator.locate(action.pid)
            if located is None or located.pod_uid != worker.uid:
                return  # the pid was reused or left the pod: never kill a stranger
            try:
                self.kill(action.pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            self.metrics.worker_kills.labels(self.node, worker.namespace, worker.name).inc()
        elif action.kind == "evict":
            self.metrics.worker_evictions.labels(self.node, worker.namespace, worker.name).inc()
            # Only a worker of this node (its record names this node; the pods come from this
            # node's list), and only the very pod seen (uid precondition).
            self.outbox.put(lambda: self.cluster.evict_pod(worker.namespace, worker.name, uid=worker.uid))


def _state(proc_root: Path, pid: int) -> str:
    try:
        return (proc_root / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
