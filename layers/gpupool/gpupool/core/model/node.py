"""GPUNode and GPU (tensor-fusion.ai/v1): what the controllers and node agents observe.

Role: a GPU node's management mode, totals, availability, phase and host information; a
physical GPU's capacity, availability, model, vendor and owner (GPU objects carry the label
tensor-fusion.ai/gpupool).

Must not: allocate GPUs or judge a node idle (the allocator and compaction modules do).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import (
    Condition,
    Kept,
    Loose,
    ObservedResource,
    Qty,
    SpecModel,
    StatusModel,
    TensorFusionObject,
)

__all__ = [
    "GPU",
    "GPUNode",
    "GPUNodeInfo",
    "GPUNodeSpec",
    "GPUNodeStatus",
    "GPUStatus",
    "ManageMode",
]

ManageMode = Literal["Manual", "AutoSelect", "Provisioned"]


class GPUNodeSpec(SpecModel):
    manage_mode: ManageMode = "AutoSelect"
    cost_per_hour: str | None = None
    gpu_card_indices: list[int] = Field(default_factory=list, alias="gpuCardIndices")
    cloud_vendor_param: str | None = None


class GPUNodeInfo(StatusModel):
    instance_id: str | None = Field(default=None, alias="instanceID")
    region: str | None = None
    hostname: str | None = None
    ip: str | None = None
    kernel_version: str | None = None
    os_image: str | None = None
    gpu_driver_version: str | None = Field(default=None, alias="gpuDriverVersion")
    gpu_model: str | None = Field(default=None, alias="gpuModel")
    gpu_count: int | None = Field(default=None, alias="gpuCount")
    operating_system: str | None = None
    architecture: str | None = None
    ram_size: Qty | None = None
    data_disk_size: Qty | None = None


class GPUNodeStatus(StatusModel):
    phase: str = "Pending"
    conditions: list[Condition] = Field(default_factory=list)
    total_tflops: Qty | None = Field(default=None, alias="totalTFlops")
    total_vram: Qty | None = Field(default=None, alias="totalVRAM")
    virtual_tflops: Qty | None = Field(default=None, alias="virtualTFlops")
    virtual_vram: Qty | None = Field(default=None, alias="virtualVRAM")
    available_tflops: Qty | None = Field(default=None, alias="availableTFlops")
    available_vram: Qty | None = Field(default=None, alias="availableVRAM")
    virtual_available_tflops: Qty | None = Field(default=None, alias="virtualAvailableTFlops")
    virtual_available_vram: Qty | None = Field(default=None, alias="virtualAvailableVRAM")
    hypervisor_status: Loose | None = None
    node_info: GPUNodeInfo | None = None
    loaded_models: list[str] | None = None
    total_gpus: int | None = Field(default=None, alias="totalGPUs")
    managed_gpus: int | None = Field(default=None, alias="managedGPUs")
    managed_gpu_device_ids: list[str] = Field(default_factory=list, alias="managedGPUDeviceIDs")
    observed_generation: int | None = None
    allocation_info: list[Loose] = Field(default_factory=list)
    # Written by TensorFusion's controllers; kept, not acted on (docs/compatibility.md).
    allocated_pods: Kept = None
    total_gpu_pods: Kept = Field(default=None, alias="totalGPUPods")


class GPUNode(TensorFusionObject):
    """tensor-fusion.ai/v1 GPUNode (named like its Kubernetes node)."""

    KIND: ClassVar[str] = "GPUNode"
    PLURAL: ClassVar[str] = "gpunodes"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("gn",)
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Phase", ".status.phase", "string"),
        ("Total TFlops", ".status.totalTFlops", "string"),
        ("Total VRAM", ".status.totalVRAM", "string"),
        ("Available TFlops", ".status.availableTFlops", "string"),
        ("Available VRAM", ".status.availableVRAM", "string"),
        ("GPU Count", ".status.totalGPUs", "integer"),
    )

    kind: Literal["GPUNode"] = "GPUNode"
    spec: GPUNodeSpec = Field(default_factory=GPUNodeSpec)
    status: GPUNodeStatus | None = None

    def printed(self) -> GPUNode:
        """This GPUNode as its `kubectl get gpunodes` row gives it (what `list_gpu_nodes(summary=True)`
        answers): its metadata, and the status fields the printer columns show."""
        status = self.status
        if status is None:
            return GPUNode(metadata=self.metadata)
        shown = GPUNodeStatus(
            phase=status.phase,
            total_tflops=status.total_tflops,
            total_vram=status.total_vram,
            available_tflops=status.available_tflops,
            available_vram=status.available_vram,
            total_gpus=status.total_gpus,
        )
        return GPUNode(metadata=self.metadata, status=shown)


class GPUStatus(StatusModel):
    phase: str = "Pending"
    vendor: str | None = None
    capacity: ObservedResource | None = None
    available: ObservedResource | None = None
    uuid: str | None = None
    isolation_mode: str | None = None
    index: int | None = None
    numa_node: int | None = Field(default=None, alias="numaNode")
    node_selector: dict[str, str] = Field(default_factory=dict)
    gpu_model: str | None = Field(default=None, alias="gpuModel")
    used_by: str | None = None
    message: str | None = None
    running_apps: list[Loose] = Field(default_factory=list)
    allocated_partitions: Loose | None = None
    # Written by TensorFusion's node agent and scheduler; kept, not acted on (docs/compatibility.md).
    nv_link: Kept = Field(default=None, alias="nvLink")
    topology: Kept = None
    isolation_policy: Kept = None
    active_isolation_mode: Kept = None
    dynamic_isolation_conflict: Kept = None
    model: Kept = None


class GPU(TensorFusionObject):
    """tensor-fusion.ai/v1 GPU: one physical device (status only)."""

    KIND: ClassVar[str] = "GPU"
    PLURAL: ClassVar[str] = "gpus"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("GPU Model", ".status.gpuModel", "string"),
        ("Phase", ".status.phase", "string"),
        ("Total TFlops", ".status.capacity.tflops", "string"),
        ("Total VRAM", ".status.capacity.vram", "string"),
        ("Available TFlops", ".status.available.tflops", "string"),
        ("Available VRAM", ".status.available.vram", "string"),
        ("Device UUID", ".status.uuid", "string"),
    )

    kind: Literal["GPU"] = "GPU"
    status: GPUStatus | None = None
