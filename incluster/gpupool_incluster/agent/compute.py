"""The compute controller: duty-cycles each throttled worker so its SM share tracks its target.

Role: every tick (default 100 ms) take, per GPU, the workers' processes and their latest SM
samples; plan each worker's target (`compute_plan.plan_targets`); smooth what each worker
measures (EWMA) and adjust its duty by integral control — duty += gain × (target − measured) —
starting from duty = target, then hand (pids, duty) to the `DutyCycler`. A worker whose target is
100 % or more, or who left the GPU, is released at once. Counts what it did for `/metrics`.

Must not: signal processes itself (the cycler does), read NVML or the cluster (the runner passes
samples and workers in), or touch a process that is not a worker's.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpupool_incluster.agent.compute_plan import ShareRequest, plan_targets
from gpupool_incluster.agent.throttle import DutyCycler

__all__ = ["ComputeController", "WorkerOnGpu", "WorkerReading"]

log = logging.getLogger("gpupool.agent")
UNTHROTTLED = 99.5  # a target at or above this is "no limit"
MIN_DUTY = 0.01  # never starve a worker completely: it keeps answering health checks


@dataclass(frozen=True, slots=True)
class WorkerOnGpu:
    """One worker's processes on one GPU, with its request and limit share (percent)."""

    key: str
    gpu: str
    rank: int
    request: float
    limit: float
    pids: frozenset[int]


@dataclass(slots=True)
class WorkerReading:
    """What the controller knows of one worker (exported as metrics)."""

    target: float = 100.0
    measured: float = 0.0
    duty: float = 1.0


@dataclass(slots=True)
class _Loop:
    measured: float | None = None
    duty: float = 1.0


@dataclass(slots=True)
class ComputeController:
    cycler: DutyCycler
    gain: float = 0.25
    smoothing: float = 0.35
    readings: dict[str, WorkerReading] = field(default_factory=dict)
    actions: Counter[str] = field(default_factory=Counter)  # throttle / release, for /metrics
    _loops: dict[str, _Loop] = field(default_factory=dict)

    def step(self, placements: Sequence[WorkerOnGpu], samples: Mapping[int, float]) -> None:
        """One control tick. `samples` is the latest SM percent per pid (absent: no new sample)."""
        by_gpu: dict[str, list[WorkerOnGpu]] = {}
        for placement in placements:
            by_gpu.setdefault(placement.gpu, []).append(placement)
        targets: dict[str, float] = {}
        measured: dict[str, float | None] = {}
        pids: dict[str, frozenset[int]] = {}
        for gpu_workers in by_gpu.values():
            planned = plan_targets([ShareRequest(w.key, w.rank, w.request, w.limit) for w in gpu_workers])
            for worker in gpu_workers:
                targets[worker.key] = min(targets.get(worker.key, 100.0), planned[worker.key])
                seen = [samples[pid] for pid in worker.pids if pid in samples]
                if seen:
                    value = sum(seen)
                    previous = measured.get(worker.key)
                    measured[worker.key] = value if previous is None else max(previous, value)
                else:
                    measured.setdefault(worker.key, None)
                pids[worker.key] = pids.get(worker.key, frozenset()) | worker.pids
        for key in list(self._loops):
            if key not in targets:
                self._release(key)
        for key, target in targets.items():
            self._control(key, target, measured[key], pids[key])

    def _release(self, key: str) -> None:
        if self._loops.pop(key, None) is not None:
            self.actions["release"] += 1
            log.info("released %s", key, extra={"action": "release", "worker": key})
        self.readings.pop(key, None)
        self.cycler.clear(key)

    def _control(self, key: str, target: float, sample: float | None, pids: frozenset[int]) -> None:
        loop = self._loops.get(key)
        reading = self.readings.setdefault(key, WorkerReading())
        reading.target = target
        if loop is None:
            loop = self._loops[key] = _Loop(duty=min(1.0, max(MIN_DUTY, target / 100.0)))
            if target < UNTHROTTLED:
                self.actions["throttle"] += 1
                log.info(
                    "throttling %s to %.1f%% SM",
                    key,
                    target,
                    extra={"action": "throttle", "worker": key, "target": target},
                )
        if sample is not None:
            alpha = self.smoothing
            loop.measured = (
                sample if loop.measured is None else loop.measured + alpha * (sample - loop.measured)
            )
            reading.measured = loop.measured
        if target >= UNTHROTTLED:
            loop.duty = 1.0
        elif sample is not None and loop.measured is not None:
            error = (target - loop.measured) / 100.0
            loop.duty = min(1.0, max(MIN_DUTY, loop.duty + self.gain * error))
        reading.duty = loop.duty
        self.cycler.set(key, pids, loop.duty)

    def close(self) -> None:
        for key in list(self._loops):
            self._release(key)
