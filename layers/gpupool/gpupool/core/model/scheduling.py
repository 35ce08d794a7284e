"""SchedulingConfigTemplate (tensor-fusion.ai/v1): placement policy referenced by pools.

Role: placement {mode (default NodeCompactGPULowLoad), allowUsingLocalGPU, gpuFilters};
verticalScalingRules, reBalancer, hypervisor (and the older autoScaling) as typed models whose
first-level fields TensorFusion names; gpupool has none of these features yet, so each is
kept as written (deeper blocks included) and `gpupool validate` lists it as not acted on.

Each class builds its pydantic schema on first use (`defer_build`): the functions import this
module with the kinds' registry but never read these objects, so their cold start skips it.

Must not: score nodes or GPUs (the scheduling decision modules do).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, WithJsonSchema

from gpupool.core.model.base import Kept, Loose, PreservedModel, SpecModel, TensorFusionObject
from gpupool.core.model.common import LabelSelector
from gpupool.core.model.placement_mode import PLACEMENT_MODES, PlacementMode

__all__ = [
    "PLACEMENT_MODES",
    "GPUFilter",
    "HypervisorScheduling",
    "PlacementConfig",
    "PlacementMode",
    "ReBalancerConfig",
    "SchedulingConfigTemplate",
    "SchedulingConfigTemplateSpec",
    "VerticalScalingRule",
]


class GPUFilter(SpecModel, defer_build=True):
    type: str | None = None
    params: Loose | None = None


class PlacementConfig(SpecModel, defer_build=True):
    # The CRD's schema: a string of the modes' names (the model reads them as PlacementMode).
    mode: Annotated[PlacementMode, WithJsonSchema({"type": "string", "enum": list(PLACEMENT_MODES)})] = (
        PlacementMode.NODE_COMPACT_GPU_LOW_LOAD
    )
    allow_using_local_gpu: bool | None = Field(default=None, alias="allowUsingLocalGPU")
    gpu_filters: list[GPUFilter] = Field(default_factory=list, alias="gpuFilters")


class ReBalancerConfig(PreservedModel, defer_build=True):
    """Move workloads off hot GPUs (TensorFusion's ReBalancerConfig): not acted on by gpupool."""

    enable: bool | None = None
    interval: str | None = None
    re_balance_cool_down_time: str | None = None
    threshold: Kept = None


class VerticalScalingRule(PreservedModel, defer_build=True):
    """Autoscaling settings for the workloads a selector picks: not acted on by gpupool."""

    name: str | None = None
    selector: LabelSelector | None = None
    auto_scaling_config: Kept = None


class HypervisorScheduling(PreservedModel, defer_build=True):
    """Per-GPU queuing, rate limiting and auto-freeze (TensorFusion's HypervisorScheduling):
    enforced by TensorFusion's hypervisor on the node, not by gpupool."""

    auto_freeze_and_resume: Kept = None
    elastic_rate_limit_parameters: Kept = None
    multi_process_queuing_parameters: Kept = None


class SchedulingConfigTemplateSpec(SpecModel, defer_build=True):
    placement: PlacementConfig = Field(default_factory=PlacementConfig)
    vertical_scaling_rules: list[VerticalScalingRule] = Field(default_factory=list)
    re_balancer: ReBalancerConfig | None = None
    hypervisor: HypervisorScheduling | None = None
    auto_scaling: Loose | None = None


class SchedulingConfigTemplate(TensorFusionObject, defer_build=True):
    """tensor-fusion.ai/v1 SchedulingConfigTemplate."""

    KIND: ClassVar[str] = "SchedulingConfigTemplate"
    PLURAL: ClassVar[str] = "schedulingconfigtemplates"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("sct",)
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Mode", ".spec.placement.mode", "string"),
    )

    kind: Literal["SchedulingConfigTemplate"] = "SchedulingConfigTemplate"
    spec: SchedulingConfigTemplateSpec = Field(default_factory=SchedulingConfigTemplateSpec)
