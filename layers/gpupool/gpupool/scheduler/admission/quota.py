"""GPUResourceQuota at admission: a pod above its `single` bounds, or one that would take the
namespace past its `total`, is denied with the field, the pod's own amounts and the bound.

Every request form counts (`core.allocator.quota.pod_amounts`): TFLOPS, compute-percent, a GPU
share, dedicated GPUs, each times its gpu-count, in TFLOPS, VRAM and compute (percent of a GPU),
converted by the largest GPU the relay knows. An amount that cannot be converted yet (no GPU known)
is judged by the scheduler, which applies the same bounds when it places the pod. A denial never
names what the namespace already uses.

Must not: read the cluster (usage and the largest GPU are passed in) or patch anything.
"""

from __future__ import annotations

from gpupool.core.allocator.build import quota_limits
from gpupool.core.allocator.quota import QuotaUsage, pod_amounts, quota_failure, single_failure
from gpupool.core.allocator.request import GpuRequest
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.scheduler.admission.errors import Denial

__all__ = ["check_quota"]


def check_quota(
    request: GpuRequest,
    quota: GPUResourceQuota | None,
    usage: QuotaUsage,
    *,
    largest_gpu: tuple[int, int] = (0, 0),
) -> None:
    """Denial when the pod breaks its namespace's GPUResourceQuota (single bounds or totals);
    `largest_gpu` is (milli-TFLOPS, VRAM bytes) of the largest GPU known, (0, 0) when none is."""
    if quota is None:
        return
    limits = quota_limits(quota)
    amounts = pod_amounts(request, largest_tflops=largest_gpu[0], largest_vram=largest_gpu[1])
    failure = single_failure(request.namespace, limits, amounts) or quota_failure(
        request.namespace,
        limits,
        usage,
        tflops_request=amounts.tflops_request or 0,
        tflops_limit=amounts.tflops_limit or 0,
        vram_request=amounts.vram_request or 0,
        vram_limit=amounts.vram_limit or 0,
    )
    if failure is not None:
        raise Denial(failure)
