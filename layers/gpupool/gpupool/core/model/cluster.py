"""TensorFusionCluster (tensor-fusion.ai/v1): the cloud vendor connection and inline pools.

Role: computingVendor (name, type, authType, enable, params with extraParams) and
gpuPools[] {name, isDefault, specTemplate: GPUPoolSpec}, named as TensorFusion names them.

Must not: connect to a cloud or expand pools into GPUPool objects (the service does that).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import (
    Condition,
    Qty,
    SpecModel,
    StatusModel,
    TensorFusionObject,
)
from gpupool.core.model.pool import GPUPoolSpec

__all__ = [
    "AuthType",
    "ComputingVendor",
    "ComputingVendorParams",
    "ComputingVendorType",
    "GPUPoolDefinition",
    "TensorFusionCluster",
    "TensorFusionClusterSpec",
    "TensorFusionClusterStatus",
]

ComputingVendorType = Literal[
    "aws",
    "lambda-labs",
    "gcp",
    "azure",
    "oracle-oci",
    "ibm",
    "openshift",
    "vultr",
    "together-ai",
    "alibaba",
    "nvidia",
    "tencent",
    "runpod",
    "karpenter",
    "mock",
]
AuthType = Literal["accessKey", "serviceAccountRole"]


class ComputingVendorParams(SpecModel):
    """Region and credentials (credential files are mounted, never inlined)."""

    default_region: str | None = None
    access_key_path: str | None = None
    secret_key_path: str | None = None
    iam_role: str | None = None
    config_file: str | None = None
    extra_params: dict[str, str] = Field(default_factory=dict)


class ComputingVendor(SpecModel):
    """Which cloud the cluster provisions in and how it authenticates."""

    name: str | None = None
    type: ComputingVendorType | None = None
    auth_type: AuthType | None = None
    enable: bool = True
    params: ComputingVendorParams = Field(default_factory=ComputingVendorParams)


class GPUPoolDefinition(SpecModel):
    """A pool declared inline in the cluster."""

    name: str
    is_default: bool = False
    spec_template: GPUPoolSpec = Field(default_factory=GPUPoolSpec)


class TensorFusionClusterSpec(SpecModel):
    gpu_pools: list[GPUPoolDefinition] = Field(default_factory=list, alias="gpuPools")
    computing_vendor: ComputingVendor | None = None


class TensorFusionClusterStatus(StatusModel):
    phase: str = "Pending"
    conditions: list[Condition] = Field(default_factory=list)
    total_pools: int | None = None
    total_nodes: int | None = None
    total_gpus: int | None = Field(default=None, alias="totalGPUs")
    total_tflops: Qty | None = Field(default=None, alias="totalTFlops")
    total_vram: Qty | None = Field(default=None, alias="totalVRAM")
    available_tflops: Qty | None = Field(default=None, alias="availableTFlops")
    available_vram: Qty | None = Field(default=None, alias="availableVRAM")
    ready_gpu_pools: list[str] = Field(default_factory=list, alias="readyGPUPools")
    not_ready_gpu_pools: list[str] = Field(default_factory=list, alias="notReadyGPUPools")
    cloud_vendor_config_hash: str | None = None


class TensorFusionCluster(TensorFusionObject):
    """tensor-fusion.ai/v1 TensorFusionCluster."""

    KIND: ClassVar[str] = "TensorFusionCluster"
    PLURAL: ClassVar[str] = "tensorfusionclusters"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("tfc",)
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Phase", ".status.phase", "string"),
        ("Vendor", ".spec.computingVendor.type", "string"),
        ("Total Pools", ".status.totalPools", "integer"),
        ("Total Nodes", ".status.totalNodes", "integer"),
    )

    kind: Literal["TensorFusionCluster"] = "TensorFusionCluster"
    spec: TensorFusionClusterSpec = Field(default_factory=TensorFusionClusterSpec)
    status: TensorFusionClusterStatus | None = None

    def pool_spec(self, pool_name: str) -> GPUPoolSpec | None:
        """The specTemplate of the inline pool called `pool_name`, if any."""
        for pool in self.spec.gpu_pools:
            if pool.name == pool_name:
                return pool.spec_template
        return None
