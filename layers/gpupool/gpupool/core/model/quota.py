"""GPUResourceQuota (tensor-fusion.ai/v1, namespaced): namespace totals and per-workload limits.

Role: spec.total {requests, limits, maxWorkers (default 32768), alertThresholdPercent (default
95)} and spec.single {maxRequests, maxLimits, maxGPUCount, defaultRequests, defaultLimits}; usage in status.

Each class builds its pydantic schema on first use (`defer_build`): the functions import this
module with the kinds' registry but never read these objects, so their cold start skips it.

Must not: admit or reject workloads (the webhook's decision module does).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import (
    Condition,
    ObservedResource,
    Resource,
    SpecModel,
    StatusModel,
    TensorFusionObject,
    crd_default,
)

__all__ = [
    "GPUResourceQuota",
    "GPUResourceQuotaSingle",
    "GPUResourceQuotaSpec",
    "GPUResourceQuotaStatus",
    "GPUResourceQuotaTotal",
]


class GPUResourceQuotaTotal(SpecModel, defer_build=True):
    requests: Resource | None = None
    limits: Resource | None = None
    max_workers: int = crd_default(32768, ge=0)
    alert_threshold_percent: int = crd_default(95, ge=0, le=100)


class GPUResourceQuotaSingle(SpecModel, defer_build=True):
    max_requests: Resource | None = None
    max_limits: Resource | None = None
    max_gpu_count: int | None = Field(default=None, alias="maxGPUCount", ge=0)
    default_requests: Resource | None = None
    default_limits: Resource | None = None


class GPUResourceQuotaSpec(SpecModel, defer_build=True):
    total: GPUResourceQuotaTotal = Field(default_factory=GPUResourceQuotaTotal)
    single: GPUResourceQuotaSingle = Field(default_factory=GPUResourceQuotaSingle)


class GPUResourceUsage(StatusModel, defer_build=True):
    requests: ObservedResource | None = None
    limits: ObservedResource | None = None
    workers: int | None = None


class GPUResourceQuotaStatus(StatusModel, defer_build=True):
    used: GPUResourceUsage | None = None
    conditions: list[Condition] = Field(default_factory=list)


class GPUResourceQuota(TensorFusionObject, defer_build=True):
    """tensor-fusion.ai/v1 GPUResourceQuota."""

    KIND: ClassVar[str] = "GPUResourceQuota"
    PLURAL: ClassVar[str] = "gpuresourcequotas"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("gpuquota",)
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Workers Used", ".status.used.workers", "integer"),
        ("Max Workers", ".spec.total.maxWorkers", "integer"),
    )

    kind: Literal["GPUResourceQuota"] = "GPUResourceQuota"
    spec: GPUResourceQuotaSpec = Field(default_factory=GPUResourceQuotaSpec)
    status: GPUResourceQuotaStatus | None = None
