"""What recent GPU work brings with it: CPU and memory per GPU, and the GPU shapes it asks for.

Role: BalancedFit (see `balanced_fit`) keeps nodes' CPU and memory in step with their free GPUs
and judges GPU leftovers against the requests the cluster sees. This module keeps a long sliding
window of the requests the allocator was asked to place (placed or refused) — running sums, so a
request costs O(1) — and reads it, when due, as a `Demand`: CPU (milli) and memory (bytes) per GPU
requested, and each GPU shape's share of the GPUs requested (a request for k GPUs counts k times).
A request's GPUs are its count times the part of a GPU each takes: a share in thousandths, a
compute percentage, a whole (dedicated) GPU, or absolute TFLOPS over the cluster's typical GPU
(the median TFLOPS capacity, passed in). The snapshot is read at the first request, then every
`refresh_every` requests — while the window is young, whenever it has grown by half (at least
`young_step` requests) — so caches built on one snapshot stay valid between.

Must not: look at nodes or GPUs beyond the typical capacity it is given, score anything, read the
clock or do I/O.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.mix import RequestShape, gpu_part

__all__ = ["Demand", "DemandProfile", "gpus_per_request"]

F64 = npt.NDArray[np.float64]


def gpus_per_request(shape: RequestShape, typical_tflops: int) -> float:
    """The GPUs one request of `shape` takes, in GPUs (count × the part of each GPU)."""
    if shape.dedicated:
        part = 1.0
    elif shape.share_milli is not None:
        part = shape.share_milli / 1000
    elif shape.compute_percent is not None:
        part = shape.compute_percent / 100
    else:
        part = min(1.0, shape.tflops / typical_tflops) if typical_tflops > 0 else 0.0
    return max(1, shape.gpu_count) * part


@dataclass(frozen=True, slots=True)
class Demand:
    """One reading of the window. `cpu_per_gpu` and `memory_per_gpu` are 0 when nobody asked any."""

    version: int
    cpu_per_gpu: float
    memory_per_gpu: float
    shapes: tuple[RequestShape, ...]  # GPU parts (no CPU or memory), heaviest first
    weights: F64  # each shape's share of the GPUs requested; sums to 1 over `shapes`


@dataclass(slots=True)
class _Sums:
    requests: int = 0
    cpu: int = 0
    memory: int = 0


class DemandProfile:
    """A sliding window of the last `window` requests, read as a `Demand` when due."""

    def __init__(
        self, *, window: int = 10_000, refresh_every: int = 1_000, max_shapes: int = 64, young_step: int = 64
    ) -> None:
        if window < 1 or refresh_every < 1 or max_shapes < 1 or young_step < 1:
            raise ValueError("window, refresh_every, max_shapes and young_step must be at least 1")
        self.young_step = young_step
        self.window = window
        self.refresh_every = refresh_every
        self.max_shapes = max_shapes
        self._recent: deque[tuple[RequestShape, int, int]] = deque()
        self._sums: dict[RequestShape, _Sums] = {}
        self._since = 0
        self._demand: Demand | None = None
        self._typical = 0

    def __len__(self) -> int:
        return len(self._recent)

    def record(self, shape: RequestShape) -> None:
        """Count one more request, forgetting the oldest past the window."""
        part = gpu_part(shape)
        self._recent.append((part, shape.cpu_milli, shape.memory))
        self._add(part, shape.cpu_milli, shape.memory, 1)
        if len(self._recent) > self.window:
            self._add(*self._recent.popleft(), -1)
        self._since += 1

    def _add(self, part: RequestShape, cpu: int, memory: int, sign: int) -> None:
        sums = self._sums.get(part)
        if sums is None:
            sums = self._sums[part] = _Sums()
        sums.requests += sign
        sums.cpu += sign * cpu
        sums.memory += sign * memory
        if not sums.requests:
            del self._sums[part]

    def demand(self, typical_tflops: int) -> Demand | None:
        """The current reading (None before any request), re-read when due or when the cluster's
        typical GPU changed."""
        young = max(self.young_step, len(self._recent) // 2)
        due = self._since >= min(self.refresh_every, young) or typical_tflops != self._typical
        if self._sums and (self._demand is None or due):
            self._demand = self._read(typical_tflops)
            self._typical = typical_tflops
            self._since = 0
        return self._demand

    def _read(self, typical_tflops: int) -> Demand:
        gpus = {s: sums.requests * gpus_per_request(s, typical_tflops) for s, sums in self._sums.items()}
        total_gpus = sum(gpus.values())
        cpu = sum(sums.cpu for sums in self._sums.values())
        memory = sum(sums.memory for sums in self._sums.values())
        slots = {s: sums.requests * max(1, s.gpu_count) for s, sums in self._sums.items()}
        # Heaviest first; equal counts in a fixed order so the reading never depends on hashing.
        ranked = sorted(slots.items(), key=lambda item: (-item[1], repr(item[0])))[: self.max_shapes]
        counted = sum(count for _, count in ranked)
        version = 1 if self._demand is None else self._demand.version + 1
        return Demand(
            version=version,
            cpu_per_gpu=cpu / total_gpus if total_gpus > 0 else 0.0,
            memory_per_gpu=memory / total_gpus if total_gpus > 0 else 0.0,
            shapes=tuple(shape for shape, _ in ranked),
            weights=np.array([count / counted for _, count in ranked], dtype=np.float64),
        )
