"""GPUNodeClaim (tensor-fusion.ai/v1): the record of intent to launch one node.

Role: what is requested (type, zone, capacity type) and what it will bring (TFLOPS, VRAM,
GPU count); status phases Pending → Creating → Bound, plus gpupool's Failed with a reason.

Must not: launch anything or decide timeouts (the service and the claim lifecycle module do).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from gpupool.core.model.base import (
    Condition,
    GroupKindName,
    Qty,
    SpecModel,
    StatusModel,
    TensorFusionObject,
)
from gpupool.core.model.capacity_type import CapacityType, capacity_type

__all__ = [
    "CapacityType",
    "ClaimPhase",
    "GPUNodeClaim",
    "GPUNodeClaimSpec",
    "GPUNodeClaimStatus",
]


def _capacity_type_spelling(value: object) -> object:
    # TensorFusion's schema takes any string here; Karpenter's spelling (spot, on-demand) and
    # any case mean the same capacity type, so gpupool reads them as TensorFusion's names.
    if isinstance(value, str):
        return capacity_type(value) or value
    return value


ClaimPhase = Literal["Pending", "Creating", "Bound", "Failed"]


class GPUNodeClaimSpec(SpecModel):
    node_name: str | None = None
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    node_class_ref: GroupKindName | None = None
    # The CRD takes any spelling (the model reads spot / on-demand as Spot / OnDemand).
    capacity_type: Annotated[
        CapacityType | None, BeforeValidator(_capacity_type_spelling), WithJsonSchema({"type": "string"})
    ] = None
    tflops_offered: Qty
    vram_offered: Qty
    gpu_device_offered: int = Field(ge=0)
    extra_params: dict[str, str] = Field(default_factory=dict)


class GPUNodeClaimStatus(StatusModel):
    phase: ClaimPhase = "Pending"
    instance_id: str | None = Field(default=None, alias="instanceID")
    conditions: list[Condition] = Field(default_factory=list)
    reason: str | None = None
    message: str | None = None


class GPUNodeClaim(TensorFusionObject):
    """tensor-fusion.ai/v1 GPUNodeClaim."""

    KIND: ClassVar[str] = "GPUNodeClaim"
    PLURAL: ClassVar[str] = "gpunodeclaims"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("gnclaim",)
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Phase", ".status.phase", "string"),
        ("Instance Type", ".spec.instanceType", "string"),
        ("Zone", ".spec.zone", "string"),
        ("Capacity Type", ".spec.capacityType", "string"),
        ("Instance ID", ".status.instanceID", "string"),
        ("Reason", ".status.reason", "string"),
    )

    kind: Literal["GPUNodeClaim"] = "GPUNodeClaim"
    spec: GPUNodeClaimSpec
    status: GPUNodeClaimStatus | None = None
