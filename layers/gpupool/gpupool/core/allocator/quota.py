"""Namespace GPU quota: usage bookkeeping and the checks a new request must pass.

Role: add up what allocations hold per namespace (TFLOPS and VRAM requests and limits, workers);
convert one pod's request, whatever its form (TFLOPS, compute-percent, a GPU share, dedicated,
with its gpu-count), into every unit a quota bounds (`pod_amounts`: TFLOPS and VRAM by the
largest GPU known, as a pod may land on it; compute as a percentage of one GPU); and say, in one
sentence, which per-pod bound (`single_failure`) or namespace total (`quota_failure`) it breaks.
A refusal names the pod's own amounts and the quota's bound only, never what the namespace (or
any other) already uses: the webhook's denial and simulate-schedule's answer reach whoever sent
the pod, for any namespace they name.

Must not: read quota objects (the caller converts them to `QuotaLimits`) or mutate allocations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from gpupool.core.allocator.reasons import format_bytes, format_tflops
from gpupool.core.allocator.records import Allocation
from gpupool.core.allocator.request import GpuRequest, QuotaLimits

__all__ = ["PodAmounts", "QuotaUsage", "pod_amounts", "quota_failure", "single_failure"]


@dataclass(frozen=True, slots=True)
class PodAmounts:
    """What one pod holds over all its GPUs, in each unit a quota bounds; None: not known yet
    (a compute-percent pod's TFLOPS before any GPU is known)."""

    tflops_request: int | None
    tflops_limit: int | None
    vram_request: int | None
    vram_limit: int | None
    compute_request: float | None
    compute_limit: float | None
    gpu_count: int
    form: str  # how the pod asked, for the refusal


def pod_amounts(request: GpuRequest, *, largest_tflops: int, largest_vram: int) -> PodAmounts:
    """`request` in every unit (see the module docstring); `largest_*` 0 when no GPU is known."""
    count = request.gpu_count
    t_known, v_known = largest_tflops > 0, largest_vram > 0

    def tflops_of(percent: float) -> int | None:
        return math.ceil(largest_tflops * percent / 100) * count if t_known else None

    def percent_of(milli: int) -> float | None:
        return milli * 100 / largest_tflops * count if t_known else None

    vram_request: int | None = request.vram_request * count
    vram_limit: int | None = max(request.vram_limit, request.vram_request) * count
    if request.dedicated:
        whole = largest_vram * count if v_known else None
        return PodAmounts(
            tflops_of(100),
            tflops_of(100),
            whole,
            whole,
            100.0 * count,
            100.0 * count,
            count,
            "dedicated GPUs",
        )
    if request.gpu_share_milli is not None:
        share = request.gpu_share_milli / 10
        vram = largest_vram * request.gpu_share_milli // 1000 * count if v_known else None
        return PodAmounts(
            tflops_of(share), tflops_of(share), vram, vram, share * count, share * count, count, "a GPU share"
        )
    if request.compute_percent_request is not None:
        low = request.compute_percent_request
        high = max(request.compute_percent_limit or low, low)
        return PodAmounts(
            tflops_of(low),
            tflops_of(high),
            vram_request,
            vram_limit,
            low * count,
            high * count,
            count,
            "compute-percent",
        )
    t_request, t_limit = request.tflops_request, max(request.tflops_limit, request.tflops_request)
    return PodAmounts(
        t_request * count,
        t_limit * count,
        vram_request,
        vram_limit,
        percent_of(t_request),
        percent_of(t_limit),
        count,
        "TFLOPS",
    )


def single_failure(namespace: str, limits: QuotaLimits, amounts: PodAmounts) -> str | None:
    """None when one pod stays within the quota's `single` bounds, else the first it breaks.
    An amount not known yet is not judged here (the scheduler judges it once GPUs are known)."""
    where = f"GPUResourceQuota of namespace {namespace!r}"
    if limits.single_gpu_count is not None and amounts.gpu_count > limits.single_gpu_count:
        return f"{where}: gpu-count {amounts.gpu_count} is above single.maxGPUCount {limits.single_gpu_count}"
    checks: list[tuple[str, float | None, float | None, str]] = [
        ("single.maxRequests.tflops", limits.single_tflops_request, amounts.tflops_request, "tflops"),
        ("single.maxLimits.tflops", limits.single_tflops_limit, amounts.tflops_limit, "tflops"),
        ("single.maxRequests.vram", limits.single_vram_request, amounts.vram_request, "vram"),
        ("single.maxLimits.vram", limits.single_vram_limit, amounts.vram_limit, "vram"),
        ("single.maxRequests.compute", limits.single_compute_request, amounts.compute_request, "compute"),
        ("single.maxLimits.compute", limits.single_compute_limit, amounts.compute_limit, "compute"),
    ]
    for bound_name, bound, amount, unit in checks:
        if bound is None or amount is None or amount <= bound:
            continue
        show = _show(unit)
        return (
            f"{where}: the pod asks for {show(amount)} ({amounts.form}, {amounts.gpu_count} GPU(s)), "
            f"above {bound_name} {show(bound)}"
        )
    return None


def _show(unit: str) -> Callable[[float], str]:
    if unit == "tflops":
        return lambda milli: format_tflops(int(milli))
    if unit == "vram":
        return lambda size: format_bytes(int(size))
    return lambda percent: f"{percent:g} % of a GPU"


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
            # The pod's own amount and the bound only: what the namespace uses is not the
            # sender's to read (module docstring).
            return (
                f"GPUResourceQuota of namespace {namespace!r}: this pod's {name} {show(extra)} does not "
                f"fit in what is left of the quota's total {show(ceiling)}"
            )
    if limits.max_workers is not None and usage.workers + 1 > limits.max_workers:
        return f"GPUResourceQuota of namespace {namespace!r}: maxWorkers {limits.max_workers} reached"
    return None
