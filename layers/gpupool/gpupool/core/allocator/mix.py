"""The recent mix of requests: which request shapes arrived lately, and how often.

Role: FragmentationAware placement judges a placement against the requests the cluster is
likely to see next. This module keeps a sliding window of the last `window` request shapes the
allocator was asked to place (placed or refused) and turns it into weights — each shape's share
of the window, the heaviest `max_shapes` kept. The weights are re-read from the window every
`refresh_every` requests (more often while the window is young), so that caches built on one set
of weights stay valid between refreshes.

Must not: look at the cluster's state, score anything, read the clock or do I/O.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, replace
from functools import lru_cache

from gpupool.core.allocator.request import GpuRequest

__all__ = ["RequestMix", "RequestShape", "gpu_part"]


@dataclass(frozen=True, slots=True)
class RequestShape:
    """What one request asks of each GPU, whoever asks: the unit the mix counts.

    Exactly one way of sizing applies, in this order: a dedicated GPU (all of it), a share of
    each GPU in thousandths, a compute percentage (VRAM absolute), absolute TFLOPS and VRAM.
    """

    gpu_count: int = 1
    tflops: int = 0
    vram: int = 0
    share_milli: int | None = None
    compute_percent: float | None = None
    dedicated: bool = False
    model: str | None = None
    cpu_milli: int = 0
    memory: int = 0

    def gpu_part(self) -> RequestShape:
        """The same shape without its CPU and memory: what one GPU of it takes."""
        return replace(self, cpu_milli=0, memory=0) if self.cpu_milli or self.memory else self

    @classmethod
    def of(cls, request: GpuRequest) -> RequestShape:
        """The shape of a request (one shared object per distinct shape: a cheap, remembered lookup)."""
        return _shape_of(
            request.gpu_count,
            request.dedicated,
            request.gpu_share_milli,
            request.compute_percent_request,
            request.tflops_request,
            request.vram_request,
            request.gpu_model,
            request.cpu_milli,
            request.memory,
        )


@lru_cache(maxsize=4096)
def _shape_of(
    gpu_count: int,
    dedicated: bool,
    share_milli: int | None,
    compute_percent: float | None,
    tflops: int,
    vram: int,
    model: str | None,
    cpu_milli: int,
    memory: int,
) -> RequestShape:
    if dedicated:
        gpu = RequestShape(gpu_count=gpu_count, dedicated=True, model=model)
    elif share_milli is not None:
        gpu = RequestShape(gpu_count=gpu_count, share_milli=share_milli, model=model)
    else:
        gpu = RequestShape(
            gpu_count=gpu_count,
            tflops=0 if compute_percent is not None else tflops,
            vram=vram,
            compute_percent=compute_percent,
            model=model,
        )
    if cpu_milli or memory:
        return replace(gpu, cpu_milli=cpu_milli, memory=memory)
    return gpu


@lru_cache(maxsize=4096)
def gpu_part(shape: RequestShape) -> RequestShape:
    """`shape.gpu_part()`, remembered: the hot path asks for it once per mix entry per decision."""
    return shape.gpu_part()


class RequestMix:
    """A sliding window of request shapes, read as weights that sum to 1."""

    def __init__(self, *, window: int = 1000, refresh_every: int = 256, max_shapes: int = 64) -> None:
        if window < 1 or refresh_every < 1 or max_shapes < 1:
            raise ValueError("window, refresh_every and max_shapes must be at least 1")
        self.window = window
        self.refresh_every = refresh_every
        self.max_shapes = max_shapes
        self._recent: deque[RequestShape] = deque()
        self._counts: Counter[RequestShape] = Counter()
        self._since_refresh = 0
        self._weights: tuple[tuple[RequestShape, float], ...] = ()
        self.version = 0

    def record(self, shape: RequestShape) -> None:
        """Count one more request of `shape`, forgetting the oldest past the window."""
        self._recent.append(shape)
        self._counts[shape] += 1
        if len(self._recent) > self.window:
            old = self._recent.popleft()
            self._counts[old] -= 1
            if not self._counts[old]:
                del self._counts[old]
        self._since_refresh += 1

    def weights(self) -> tuple[tuple[RequestShape, float], ...]:
        """The heaviest shapes and their weights (summing to 1 over the shapes kept)."""
        young = max(1, len(self._recent) // 2)
        if self._since_refresh >= min(self.refresh_every, young) or (not self._weights and self._counts):
            # Heaviest first; equal counts in a fixed order so the weights never depend on hashing.
            ranked = sorted(self._counts.items(), key=lambda item: (-item[1], repr(item[0])))[
                : self.max_shapes
            ]
            total = sum(count for _, count in ranked)
            self._weights = tuple((shape, count / total) for shape, count in ranked)
            self._since_refresh = 0
            self.version += 1
        return self._weights
