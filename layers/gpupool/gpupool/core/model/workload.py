"""WorkloadProfile, TensorFusionWorkload and TensorFusionConnection (tensor-fusion.ai/v1, namespaced).

Role: the shape of a workload's GPU wants as TensorFusion names them (WorkloadProfileSpec:
replicas, poolName, resources {requests, limits}, qos, isLocalGPU, sidecarWorker, isolation
(default soft), gpuModel, gpuCount, gpuIndices, vendor, autoScalingConfig, nodeAffinity,
workerPodTemplate, gangScheduling), which a pod names with `tensor-fusion.ai/workload-profile`; a
TensorFusionWorkload carries the same spec; a TensorFusionConnection ties a client to a worker.
Fields TensorFusion adds in later versions are kept as written (these are TensorFusion's
objects, not gpupool's own).

Each class builds its pydantic schema on first use (`defer_build`): the functions import this
module with the kinds' registry but never read these objects, so their cold start skips it.

Must not: resolve a pod's profile (scheduler/admission does) or decide placement.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import (
    Condition,
    Kept,
    PreservedModel,
    Resource,
    StatusModel,
    TensorFusionObject,
    crd_default,
)

__all__ = [
    "GangScheduling",
    "TensorFusionConnection",
    "TensorFusionConnectionSpec",
    "TensorFusionConnectionStatus",
    "TensorFusionWorkload",
    "TensorFusionWorkloadStatus",
    "WorkloadProfile",
    "WorkloadProfileSpec",
    "WorkloadResources",
]


class WorkloadResources(PreservedModel, defer_build=True):
    """requests and limits: TFLOPS (or compute percent) and VRAM."""

    requests: Resource | None = None
    limits: Resource | None = None


class GangScheduling(PreservedModel, defer_build=True):
    """All-or-nothing binding of a workload's pods (the same as the gang-* pod annotations)."""

    min_members: int | None = Field(default=None, ge=0)
    timeout: str | None = None


class WorkloadProfileSpec(PreservedModel, defer_build=True):
    """What a workload asks of TensorFusion (TensorFusion's WorkloadProfileSpec)."""

    replicas: int | None = Field(default=None, ge=0)
    pool_name: str | None = None
    resources: WorkloadResources | None = None
    qos: Literal["low", "medium", "high", "critical"] | None = None
    is_local_gpu: bool | None = Field(default=None, alias="isLocalGPU")
    sidecar_worker: bool | None = None
    isolation: Literal["shared", "soft", "hard", "partitioned"] = crd_default("soft")
    gpu_model: str | None = Field(default=None, alias="gpuModel")
    gpu_count: int | None = Field(default=None, alias="gpuCount", ge=0)
    gpu_indices: list[int] = Field(default_factory=list, alias="gpuIndices")
    vendor: str | None = None
    auto_scaling_config: Kept = None
    node_affinity: Kept = None
    worker_pod_template: Kept = None
    gang_scheduling: GangScheduling | None = None


class WorkloadProfile(TensorFusionObject, defer_build=True):
    """tensor-fusion.ai/v1 WorkloadProfile: a reusable set of GPU wants."""

    KIND: ClassVar[str] = "WorkloadProfile"
    PLURAL: ClassVar[str] = "workloadprofiles"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Pool Name", ".spec.poolName", "string"),
        ("QoS", ".spec.qos", "string"),
        ("GPU Number", ".spec.gpuCount", "string"),
    )

    kind: Literal["WorkloadProfile"] = "WorkloadProfile"
    spec: WorkloadProfileSpec = Field(default_factory=WorkloadProfileSpec)


class TensorFusionWorkloadStatus(StatusModel, defer_build=True):
    phase: str = "Pending"
    conditions: list[Condition] = Field(default_factory=list)
    worker_count: int | None = None
    ready_workers: int | None = None
    pod_template_hash: str | None = None


class TensorFusionWorkload(TensorFusionObject, defer_build=True):
    """tensor-fusion.ai/v1 TensorFusionWorkload: TensorFusion's record of a running workload."""

    KIND: ClassVar[str] = "TensorFusionWorkload"
    PLURAL: ClassVar[str] = "tensorfusionworkloads"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Phase", ".status.phase", "string"),
        ("Pool Name", ".spec.poolName", "string"),
        ("Worker Count", ".status.workerCount", "integer"),
    )

    kind: Literal["TensorFusionWorkload"] = "TensorFusionWorkload"
    spec: WorkloadProfileSpec = Field(default_factory=WorkloadProfileSpec)
    status: TensorFusionWorkloadStatus | None = None


class TensorFusionConnectionSpec(PreservedModel, defer_build=True):
    """Which workload (or, in older TensorFusion versions, which pool and resources) a client uses."""

    workload_name: str | None = None
    pool_name: str | None = None
    resources: WorkloadResources | None = None
    gpus: list[str] = Field(default_factory=list, alias="gpu")


class TensorFusionConnectionStatus(StatusModel, defer_build=True):
    phase: str = "Pending"
    connection_url: str | None = Field(default=None, alias="connectionURL")
    qos_class: str | None = None
    gpu: str | None = None
    worker_name: str | None = None


class TensorFusionConnection(TensorFusionObject, defer_build=True):
    """tensor-fusion.ai/v1 TensorFusionConnection: kept and listed, not acted on by gpupool."""

    KIND: ClassVar[str] = "TensorFusionConnection"
    PLURAL: ClassVar[str] = "tensorfusionconnections"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (("Phase", ".status.phase", "string"),)

    kind: Literal["TensorFusionConnection"] = "TensorFusionConnection"
    spec: TensorFusionConnectionSpec = Field(default_factory=TensorFusionConnectionSpec)
    status: TensorFusionConnectionStatus | None = None
