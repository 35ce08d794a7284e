"""SchedulingConfigTemplate (tensor-fusion.ai/v1): placement policy referenced by pools.

Role: placement {mode (default NodeCompactGPULowLoad), allowUsingLocalGPU, gpuFilters};
verticalScalingRules, reBalancer and hypervisor are preserved as TensorFusion writes them.

Must not: score nodes or GPUs (the scheduling decision modules do).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import Loose, SpecModel, TensorFusionObject

__all__ = [
    "GPUFilter",
    "PlacementConfig",
    "PlacementMode",
    "SchedulingConfigTemplate",
    "SchedulingConfigTemplateSpec",
]

# FragmentationAware is gpupool's own mode (docs/placement.md); the other three are TensorFusion's.
PlacementMode = Literal["CompactFirst", "LowLoadFirst", "NodeCompactGPULowLoad", "FragmentationAware"]


class GPUFilter(SpecModel):
    type: str | None = None
    params: Loose | None = None


class PlacementConfig(SpecModel):
    mode: PlacementMode = "NodeCompactGPULowLoad"
    allow_using_local_gpu: bool | None = Field(default=None, alias="allowUsingLocalGPU")
    gpu_filters: list[GPUFilter] = Field(default_factory=list, alias="gpuFilters")


class SchedulingConfigTemplateSpec(SpecModel):
    placement: PlacementConfig = Field(default_factory=PlacementConfig)
    vertical_scaling_rules: list[Loose] = Field(default_factory=list)
    re_balancer: Loose | None = None
    hypervisor: Loose | None = None


class SchedulingConfigTemplate(TensorFusionObject):
    """tensor-fusion.ai/v1 SchedulingConfigTemplate."""

    KIND: ClassVar[str] = "SchedulingConfigTemplate"
    PLURAL: ClassVar[str] = "schedulingconfigtemplates"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("sct",)
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Mode", ".spec.placement.mode", "string"),
    )

    kind: Literal["SchedulingConfigTemplate"] = "SchedulingConfigTemplate"
    spec: SchedulingConfigTemplateSpec = Field(default_factory=SchedulingConfigTemplateSpec)
