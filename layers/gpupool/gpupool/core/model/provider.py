"""ProviderConfig (tensor-fusion.ai/v1, cluster-scoped): one accelerator vendor's settings.

Role: vendor, component images, hypervisor settings, hardware metadata (model, full name,
FP16 TFLOPS, partitions), virtualization templates, in-use resource names and device plugin
detection, as TensorFusion names them. gpupool reads it (so a TensorFusion cluster's objects
load) but does not act on it; fields of later TensorFusion versions are kept as written.

Each class builds its pydantic schema on first use (`defer_build`): the functions import this
module with the kinds' registry but never read these objects, so their cold start skips it.

Must not: pick images or partition GPUs.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import Kept, PreservedModel, Qty, TensorFusionObject

__all__ = ["HardwareModelInfo", "ProviderConfig", "ProviderConfigSpec", "ProviderImages"]


class ProviderImages(PreservedModel, defer_build=True):
    middleware: str | None = None
    remote_client: str | None = None
    remote_worker: str | None = None


class HardwareModelInfo(PreservedModel, defer_build=True):
    """One accelerator model: short and full name, FP16 TFLOPS, partition limits."""

    model: str
    full_model_name: str | None = None
    cost_per_hour: str | None = None
    fp16_t_flops: Qty | None = Field(default=None, alias="fp16TFlops")
    max_partitions: int | None = Field(default=None, ge=0)
    max_placement_slots: int | None = Field(default=None, ge=0)
    max_isolation_groups: int | None = Field(default=None, ge=0)
    total_extended_resources: dict[str, int] = Field(default_factory=dict)
    partition_template_refs: list[str] = Field(default_factory=list)


class ProviderConfigSpec(PreservedModel, defer_build=True):
    vendor: str
    images: ProviderImages | None = None
    hypervisor: Kept = None
    hardware_metadata: list[HardwareModelInfo] = Field(default_factory=list)
    virtualization_templates: list[Kept] = Field(default_factory=list)
    in_use_resource_names: list[str] = Field(default_factory=list)
    device_plugin_detection: Kept = None


class ProviderConfig(TensorFusionObject, defer_build=True):
    """tensor-fusion.ai/v1 ProviderConfig."""

    KIND: ClassVar[str] = "ProviderConfig"
    PLURAL: ClassVar[str] = "providerconfigs"
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (("Vendor", ".spec.vendor", "string"),)

    kind: Literal["ProviderConfig"] = "ProviderConfig"
    # TensorFusion's CRD does not require a spec (only its fields inside one): none is read as none.
    spec: ProviderConfigSpec | None = None
