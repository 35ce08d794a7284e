"""GPUResourceQuota at admission: a pod above `single` limits, or one that would take the namespace
past its `total`, is denied with the field and the amounts.

Must not: read the cluster (usage is passed in) or patch anything.
"""

from __future__ import annotations

from gpupool.core.admission.errors import Denial
from gpupool.core.allocator.build import quota_limits
from gpupool.core.allocator.quota import QuotaUsage, quota_failure
from gpupool.core.allocator.request import GpuRequest
from gpupool.core.model.quota import GPUResourceQuota

__all__ = ["check_quota"]


def check_quota(request: GpuRequest, quota: GPUResourceQuota | None, usage: QuotaUsage) -> None:
    """Denial when the pod breaks its namespace's GPUResourceQuota (single limits or totals)."""
    namespace = request.namespace
    if quota is None:
        return
    single = quota.spec.single
    count = request.gpu_count
    if single.max_gpu_count is not None and count > single.max_gpu_count:
        raise Denial(
            f"GPUResourceQuota of namespace {namespace!r}: gpu-count {count} is above "
            f"single.maxGPUCount {single.max_gpu_count}"
        )
    for label, bound, amount in (
        (
            "single.maxRequests.tflops",
            single.max_requests.tflops if single.max_requests else None,
            request.tflops_request,
        ),
        (
            "single.maxLimits.tflops",
            single.max_limits.tflops if single.max_limits else None,
            request.tflops_limit,
        ),
        (
            "single.maxRequests.vram",
            single.max_requests.vram if single.max_requests else None,
            request.vram_request,
        ),
        ("single.maxLimits.vram", single.max_limits.vram if single.max_limits else None, request.vram_limit),
    ):
        scale = 1000 if "tflops" in label else 1
        if bound is not None and amount * count > bound.value * scale:
            raise Denial(
                f"GPUResourceQuota of namespace {namespace!r}: the pod asks for "
                f"{label.split('.', 1)[1]} above {label} {bound}"
            )
    failure = quota_failure(
        namespace,
        quota_limits(quota),
        usage,
        tflops_request=request.tflops_request * count,
        tflops_limit=request.tflops_limit * count,
        vram_request=request.vram_request * count,
        vram_limit=request.vram_limit * count,
    )
    if failure is not None:
        raise Denial(failure)
