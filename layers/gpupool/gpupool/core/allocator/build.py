"""Build the allocator's inputs from tensor-fusion.ai/v1 objects: GPUs, pools, quotas.

Role: convert A's pydantic models (GPU status capacity/available/phase/gpuModel/vendor/index/
nodeSelector, label `tensor-fusion.ai/gpupool`; GPUPool oversubscription; GPUResourceQuota
totals) into the allocator's internal units, and rebuild a whole allocator from a snapshot.

Must not: fetch objects (the relay watches them) or decide placement.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from gpupool.core.allocator.allocator import Allocator
from gpupool.core.allocator.pod_request import RequestError, allocation_from_pod
from gpupool.core.allocator.records import GpuInfo
from gpupool.core.allocator.request import Oversubscription, PlacementPolicy, QuotaLimits
from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.quantity import Quantity

__all__ = ["gpu_info", "oversubscription_of", "quota_limits", "rebuild_allocator"]


def _milli(value: Quantity | None) -> int | None:
    return None if value is None else math.ceil(value.value * 1000)


def _bytes(value: Quantity | None) -> int | None:
    return None if value is None else math.ceil(value.value)


def gpu_phase(gpu: GPU) -> str:
    """The GPU's phase, unless the node agent marked it unusable (`gpu-missing-since`): then never Running."""
    missing = gpu.metadata.annotations.get(c.ANNOTATION_GPU_MISSING_SINCE)
    if missing:
        return f"Unusable (missing since {missing})"
    return gpu.status.phase if gpu.status is not None else "Pending"


def gpu_info(gpu: GPU) -> GpuInfo | None:
    """The allocator's view of a GPU object; None when it has no node or no capacity yet."""
    status = gpu.status
    if status is None or status.capacity is None:
        return None
    node = status.node_selector.get("kubernetes.io/hostname") or next(
        iter(status.node_selector.values()), None
    )
    if not node:
        return None
    available = status.available
    return GpuInfo(
        name=gpu.metadata.name or "",
        node=node,
        pool=gpu.metadata.labels.get(c.LABEL_GPU_POOL, ""),
        tflops_capacity=_milli(status.capacity.tflops) or 0,
        vram_capacity=_bytes(status.capacity.vram) or 0,
        phase=gpu_phase(gpu),
        model=status.gpu_model or "",
        vendor=status.vendor or "",
        index=status.index if status.index is not None else 0,
        tflops_available=_milli(available.tflops) if available else None,
        vram_available=_bytes(available.vram) if available else None,
        node_labels=tuple(sorted(status.node_selector.items())),
        isolation_mode=status.isolation_mode or "",
        partitions=status.allocated_partitions is not None,
    )


def oversubscription_of(pool: GPUPool) -> Oversubscription | None:
    config = pool.spec.capacity_config
    over = config.oversubscription if config else None
    if over is None:
        return None
    return Oversubscription(
        tflops_oversell_ratio=over.tflops_oversell_ratio,
        vram_expand_to_host_mem=over.vram_expand_to_host_mem or 0,
        vram_expand_to_host_disk=over.vram_expand_to_host_disk or 0,
    )


def quota_limits(quota: GPUResourceQuota) -> QuotaLimits:
    total, single = quota.spec.total, quota.spec.single
    requests, limits = total.requests, total.limits
    most, most_limits = single.max_requests, single.max_limits
    return QuotaLimits(
        tflops_requests=_milli(requests.tflops) if requests else None,
        tflops_limits=_milli(limits.tflops) if limits else None,
        vram_requests=_bytes(requests.vram) if requests else None,
        vram_limits=_bytes(limits.vram) if limits else None,
        max_workers=total.max_workers,
        single_tflops_request=_milli(most.tflops) if most else None,
        single_tflops_limit=_milli(most_limits.tflops) if most_limits else None,
        single_vram_request=_bytes(most.vram) if most else None,
        single_vram_limit=_bytes(most_limits.vram) if most_limits else None,
        single_compute_request=_percent(most.compute) if most else None,
        single_compute_limit=_percent(most_limits.compute) if most_limits else None,
        single_gpu_count=single.max_gpu_count,
    )


def _percent(value: Quantity | None) -> float | None:
    return None if value is None else float(value.value)


def rebuild_allocator(
    *,
    gpus: Iterable[GPU],
    pods: Iterable[Pod],
    pools: Iterable[GPUPool] = (),
    quotas: Iterable[GPUResourceQuota] = (),
    policy: PlacementPolicy | None = None,
    default_pool: str = "",
) -> tuple[Allocator, list[str]]:
    """A fresh allocator from a snapshot, and one warning per pod whose annotations were unreadable."""
    allocator = Allocator(policy)
    for pool in pools:
        allocator.state.set_oversubscription(pool.metadata.name or "", oversubscription_of(pool))
    for gpu in gpus:
        info = gpu_info(gpu)
        if info is not None:
            allocator.state.upsert_gpu(info)
    for quota in quotas:
        allocator.set_quota(quota.metadata.namespace or "default", quota_limits(quota))
    warnings: list[str] = []
    for pod in pods:
        if pod.status.phase in ("Succeeded", "Failed") or pod.metadata.deletion_timestamp is not None:
            continue
        if not pod.spec.node_name:  # annotated but never bound: a bind that did not finish
            continue
        try:
            allocation = allocation_from_pod(pod, allocator.state.gpus, default_pool=default_pool)
        except RequestError as exc:
            warnings.append(f"pod {pod.metadata.namespace}/{pod.metadata.name}: {exc}")
            continue
        if allocation is not None:
            allocator.add_allocation(allocation)
    allocator.state.ensure_layout()
    return allocator, warnings
