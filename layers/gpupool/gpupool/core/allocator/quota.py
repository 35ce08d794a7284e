"""Namespace GPU quota: usage bookkeeping and the check a new request must pass.

Role: add up what allocations hold per namespace (TFLOPS and VRAM requests and limits, workers)
and say, in one sentence, which GPUResourceQuota total a request would exceed.

Must not: read quota objects (the caller converts them to `QuotaLimits`) or mutate allocations.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupool.core.allocator.reasons import format_bytes, format_tflops
from gpupool.core.allocator.records import Allocation
from gpupool.core.allocator.request import QuotaLimits

__all__ = ["QuotaUsage", "quota_failure"]


@dataclass(slots=True)
class QuotaUsage:
    """What a namespace's pods hold now."""

    tflops_requests: int = 0
    tflops_limits: int = 0
    vram_requests: int = 0
    vram_limits: int = 0
    workers: int = 0

    def add(self, allocation: Allocation, sign: int = 1) -> None:
        count = len(allocation.gpus)
        self.tflops_requests += sign * sum(allocation.tflops_requests)
        self.tflops_limits += sign * sum(allocation.tflops_limits)
        self.vram_requests += sign * sum(allocation.vram_at(p) for p in range(count))
        self.vram_limits += sign * sum(allocation.vram_limit_at(p) for p in range(count))
        self.workers += sign


def quota_failure(
    namespace: str,
    limits: QuotaLimits,
    usage: QuotaUsage,
    *,
    tflops_request: int,
    tflops_limit: int,
    vram_request: int,
    vram_limit: int,
) -> str | None:
    """None when the request fits the namespace's quota, else which total it would exceed."""
    checks: list[tuple[str, int | None, int, int, bool]] = [
        ("requests.tflops", limits.tflops_requests, usage.tflops_requests, tflops_request, False),
        ("limits.tflops", limits.tflops_limits, usage.tflops_limits, tflops_limit, False),
        ("requests.vram", limits.vram_requests, usage.vram_requests, vram_request, True),
        ("limits.vram", limits.vram_limits, usage.vram_limits, vram_limit, True),
    ]
    for name, ceiling, used, extra, is_bytes in checks:
        if ceiling is not None and used + extra > ceiling:
            show = format_bytes if is_bytes else format_tflops
            return (
                f"GPUResourceQuota of namespace {namespace!r}: total {name} would be {show(used + extra)}, "
                f"above the quota's {show(ceiling)} (in use {show(used)})"
            )
    if limits.max_workers is not None and usage.workers + 1 > limits.max_workers:
        return (
            f"GPUResourceQuota of namespace {namespace!r}: maxWorkers {limits.max_workers} reached "
            f"({usage.workers} workers running)"
        )
    return None
