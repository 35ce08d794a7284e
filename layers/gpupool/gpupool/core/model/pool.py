"""GPUPool (tensor-fusion.ai/v1): capacity targets, node management, QoS and status.

Role: the exact shape of a pool spec as TensorFusion names it (field names and enums from
TensorFusion's api/v1 gpupool types and the reference documents), with the defaults gpupool
relies on, and the defaults TensorFusion's CRD writes into every stored pool (provisioningMode
AutoSelect, defaultVendor NVIDIA, defaultIsolationMode soft, nodeCompaction.period 5m,
oversubscription 500 % / 50 % / 70 %, budget 100 / 1000 / 3000 AlertOnly, rolling update
100 % / 1s / 10m, QoS pricing), so an object means the same in both systems.

A pool's name must leave room for its claims' names: each is `<pool>-<8 characters>` and is
the value of its node's `tensor-fusion.ai/node-provisioner` label, which Kubernetes limits to
63 characters, so a name longer than `MAX_POOL_NAME` (54) is refused with that reason (by
`gpupool validate` and by every reader, which skips such a pool and says why).

Must not: compute gaps or choose offerings (see the capacity planning modules).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from gpupool.core.model.base import (
    Condition,
    Duration,
    Loose,
    ObjectMeta,
    Qty,
    SpecModel,
    StatusModel,
    TensorFusionObject,
    crd_default,
)
from gpupool.core.model.common import LabelSelector, NodeSelector, ProvisionerRequirement, Taint

if TYPE_CHECKING:
    from gpupool.core.model.karpenter import NodeClassReference

__all__ = [
    "CLAIM_SUFFIX_LENGTH",
    "MAX_POOL_NAME",
    "Budget",
    "CapacityConfig",
    "CompactionPolicy",
    "ComponentConfig",
    "DisruptionBudget",
    "GPUPool",
    "GPUPoolSpec",
    "GPUPoolStatus",
    "IsolationMode",
    "IsolationModeRule",
    "KarpenterNodeClassRef",
    "MaintenanceWindow",
    "NodeCompaction",
    "NodeDefrag",
    "NodeManagerConfig",
    "NodePoolRollingUpdatePolicy",
    "NodeProvisioner",
    "Oversubscription",
    "ProvisioningMode",
    "QoSLevel",
    "QosConfig",
    "ResourceAmount",
]

ProvisioningMode = Literal["AutoSelect", "Karpenter", "Provisioned"]
QoSLevel = Literal["low", "medium", "high", "critical"]
# TensorFusion's IsolationModeType (shared is a whole-GPU allocation policy since v2.13).
IsolationMode = Literal["shared", "soft", "hard", "partitioned"]


class ResourceAmount(SpecModel):
    """An amount of pool capacity (TensorFusion's GPUOrCPUResourceUnit)."""

    tflops: Qty | None = None
    vram: Qty | None = None
    cpu: Qty | None = None
    memory: Qty | None = None


class Oversubscription(SpecModel):
    """How far the scheduler may oversell: percentages as TensorFusion defines them."""

    tflops_oversell_ratio: int = crd_default(500, ge=100, le=100000)
    vram_expand_to_host_mem: int = crd_default(50, alias="vramExpandToHostMem", ge=0, le=100)
    vram_expand_to_host_disk: int = crd_default(70, alias="vramExpandToHostDisk", ge=0, le=100)


class CapacityConfig(SpecModel):
    """minResources / warmResources / maxResources and oversubscription."""

    min_resources: ResourceAmount | None = None
    warm_resources: ResourceAmount | None = None
    max_resources: ResourceAmount | None = None
    oversubscription: Oversubscription | None = None


class KarpenterNodeClassRef(SpecModel):
    """The Karpenter NodeClass a Karpenter-mode pool launches with: all four fields required."""

    # TensorFusion's type; Karpenter's own, on a NodeClaim, is `karpenter.NodeClassReference`.

    group: str
    kind: str
    version: str
    name: str

    def reference(self) -> NodeClassReference:
        """The `nodeClassRef` a Karpenter v1 NodeClaim carries for this class (it has no version)."""
        from gpupool.core.model.karpenter import NodeClassReference

        return NodeClassReference(group=self.group, kind=self.kind, name=self.name)


class Budget(SpecModel):
    """Spending limits in dollars (TensorFusion's defaults); launch enforces them (planning.budget)."""

    budget_per_day: str = crd_default("100")
    budget_per_month: str = crd_default("1000")
    budget_per_quarter: str = crd_default("3000")
    budget_exceed_strategy: Literal["AlertOnly", "AlertAndTerminateVM"] = crd_default("AlertOnly")


class NodeProvisioner(SpecModel):
    """How Karpenter/Provisioned pools create nodes."""

    node_class: str | None = None
    karpenter_node_class_ref: KarpenterNodeClassRef | None = None
    gpu_requirements: list[ProvisionerRequirement] = Field(default_factory=list, alias="gpuRequirements")
    gpu_taints: list[Taint] = Field(default_factory=list, alias="gpuTaints")
    gpu_node_labels: dict[str, str] = Field(default_factory=dict, alias="gpuNodeLabels")
    gpu_node_annotations: dict[str, str] = Field(default_factory=dict, alias="gpuNodeAnnotations")
    cpu_requirements: list[ProvisionerRequirement] = Field(default_factory=list, alias="cpuRequirements")
    cpu_taints: list[Taint] = Field(default_factory=list, alias="cpuTaints")
    cpu_node_labels: dict[str, str] = Field(default_factory=dict, alias="cpuNodeLabels")
    budget: Budget | None = None

    @field_validator("gpu_taints", "cpu_taints")
    @classmethod
    def _drop_keyless_taints(cls, taints: list[Taint]) -> list[Taint]:
        # TensorFusion's schema lets a taint's key be empty; Kubernetes would refuse such a
        # node taint, so gpupool reads it and leaves it out (docs/compatibility.md).
        return [taint for taint in taints if taint.has_key]


class NodeDefrag(SpecModel):
    """Optional cron-triggered defragmentation: move workers off low-utilisation nodes (off by default)."""

    enabled: bool = False
    schedule: str = "0 3 * * *"
    max_duration: Duration = "2h"
    utilization_threshold_percent: int = Field(default=40, ge=0, le=100)
    evicted_pod_marker_ttl: str | None = Field(default=None, alias="evictedPodMarkerTTL")
    source_node_marker_ttl: str | None = Field(default=None, alias="sourceNodeMarkerTTL")
    timezone: str | None = None


CompactionPolicy = Literal["WhenEmpty", "WhenUnderutilized"]
_BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"


class DisruptionBudget(SpecModel):
    """A Karpenter-style disruption budget: nodes (a count or a percentage), optionally scheduled."""

    # A percentage is of the pool's nodes, rounded up; with schedule (a 5-field crontab, UTC) and
    # duration it applies from each scheduled time for that long; the most restrictive active
    # budget wins (core.decisions.disruption_budget).
    nodes: str = crd_default("10%", pattern=_BUDGET_NODES)
    schedule: str | None = None
    duration: Duration | None = None

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> DisruptionBudget:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("a disruption budget's schedule and duration go together")
        return self


class NodeCompaction(SpecModel):
    """How often idle nodes are looked for, the optional defrag, and the consolidation policy."""

    # policy (gpupool's): WhenEmpty removes only nodes with nothing allocated, as TensorFusion
    # does; WhenUnderutilized also drains a node whose allocations fit the free GPUs of the pool's
    # other nodes, one node at a time within `budgets` (none: one of 10 %, Karpenter's default),
    # only when its price over `consolidationWindow` exceeds `savingsThreshold` (USD).
    # See docs/consolidation.md and core.decisions.consolidation.
    period: Duration = "5m"
    defrag: NodeDefrag | None = None
    policy: CompactionPolicy = crd_default("WhenEmpty")
    budgets: list[DisruptionBudget] = Field(default_factory=list)
    consolidation_window: Duration = crd_default("1h")
    savings_threshold: str = crd_default("0.10", pattern=r"^[0-9]+(\.[0-9]+)?$")


class MaintenanceWindow(SpecModel):
    """Crontab expressions during which rolling updates may run."""

    includes: list[str] = Field(default_factory=list)


class NodePoolRollingUpdatePolicy(SpecModel):
    """When and how fast component updates roll through the pool."""

    auto_update_hypervisor: bool | None = None
    auto_update_worker: bool | None = None
    auto_update_client: bool | None = None
    batch_percentage: int = crd_default(100, ge=0, le=100)
    batch_interval: Duration = crd_default("1s")
    max_duration: Duration = crd_default("10m")
    maintenance_window: MaintenanceWindow | None = None


class IsolationModeRule(SpecModel):
    """Nodes matching `selector` run in `mode` (rules are tried in order; the first match wins)."""

    mode: IsolationMode
    selector: LabelSelector = Field(default_factory=LabelSelector)


class NodeManagerConfig(SpecModel):
    """How the pool's nodes are found or provisioned."""

    provisioning_mode: ProvisioningMode = "AutoSelect"
    default_vendor: str = crd_default("NVIDIA")
    default_isolation_mode: IsolationMode = crd_default("soft")
    isolation_mode_rules: list[IsolationModeRule] = Field(default_factory=list)
    node_provisioner: NodeProvisioner | None = None
    node_selector: NodeSelector | None = None
    multi_vendor_node_selector: dict[str, NodeSelector] = Field(default_factory=dict)
    node_compaction: NodeCompaction | None = None
    node_pool_rolling_update_policy: NodePoolRollingUpdatePolicy | None = None


class QosDefinition(SpecModel):
    name: QoSLevel
    description: str | None = None
    priority: int | None = None


class QosPricingUnit(SpecModel):
    per_fp16_tflops_per_hour: str = crd_default("$0.0069228", alias="perFP16TFlopsPerHour")
    per_gb_of_vram_per_hour: str = crd_default("$0.01548", alias="perGBOfVRAMPerHour")


class QosPricing(SpecModel):
    qos: QoSLevel
    requests: QosPricingUnit | None = None
    limits_over_requests: str = crd_default("1")


class QosConfig(SpecModel):
    """QoS levels and their internal prices."""

    definitions: list[QosDefinition] = Field(default_factory=list)
    default_qos: QoSLevel | None = Field(default=None, alias="defaultQoS")
    pricing: list[QosPricing] = Field(default_factory=list)
    eviction_protection_price_ratio: str = crd_default("1.2")


class ComponentConfig(SpecModel):
    """Hypervisor / worker / client / node-discovery settings: preserved, not acted on."""

    worker: Loose | None = None
    hypervisor: Loose | None = None
    node_discovery: Loose | None = None
    client: Loose | None = None


class GPUPoolSpec(SpecModel):
    """A pool's desired state (also the specTemplate inside a TensorFusionCluster)."""

    default_using_local_gpu: bool | None = Field(default=None, alias="defaultUsingLocalGPU")
    capacity_config: CapacityConfig | None = None
    node_manager_config: NodeManagerConfig = Field(default_factory=NodeManagerConfig)
    qos_config: QosConfig | None = None
    component_config: ComponentConfig | None = None
    scheduling_config_template: str | None = None


class GPUPoolStatus(StatusModel):
    """What the controllers last observed about the pool."""

    cluster: str | None = None
    phase: str = "Pending"
    conditions: list[Condition] = Field(default_factory=list)
    total_nodes: int | None = None
    total_gpus: int | None = Field(default=None, alias="totalGPUs")
    ready_nodes: int | None = None
    not_ready_nodes: int | None = None
    total_tflops: Qty | None = Field(default=None, alias="totalTFlops")
    total_vram: Qty | None = Field(default=None, alias="totalVRAM")
    virtual_tflops: Qty | None = Field(default=None, alias="virtualTFlops")
    virtual_vram: Qty | None = Field(default=None, alias="virtualVRAM")
    available_tflops: Qty | None = Field(default=None, alias="availableTFlops")
    available_vram: Qty | None = Field(default=None, alias="availableVRAM")
    virtual_available_tflops: Qty | None = Field(default=None, alias="virtualAvailableTFlops")
    virtual_available_vram: Qty | None = Field(default=None, alias="virtualAvailableVRAM")
    running_apps_cnt: int | None = None
    provisioning_phase: str | None = None
    last_compaction_time: datetime | None = None
    last_defrag_time: datetime | None = None
    budget_exceeded: str | None = None
    component_status: Loose | None = None


LABEL_VALUE_MAX = 63  # Kubernetes' limit on a label value
CLAIM_SUFFIX_LENGTH = 8  # `service.deps.random_suffix`: 8 hex characters
MAX_POOL_NAME = LABEL_VALUE_MAX - CLAIM_SUFFIX_LENGTH - 1


class GPUPool(TensorFusionObject):
    """tensor-fusion.ai/v1 GPUPool."""

    KIND: ClassVar[str] = "GPUPool"
    PLURAL: ClassVar[str] = "gpupools"
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("gp",)
    PRINTER_COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("Phase", ".status.phase", "string"),
        ("Mode", ".spec.nodeManagerConfig.provisioningMode", "string"),
        ("Total TFlops", ".status.totalTFlops", "string"),
        ("Total VRAM", ".status.totalVRAM", "string"),
        ("Available TFlops", ".status.availableTFlops", "string"),
        ("Available VRAM", ".status.availableVRAM", "string"),
    )

    kind: Literal["GPUPool"] = "GPUPool"
    spec: GPUPoolSpec = Field(default_factory=GPUPoolSpec)
    status: GPUPoolStatus | None = None

    @field_validator("metadata")
    @classmethod
    def _name_leaves_room_for_claims(cls, metadata: ObjectMeta) -> ObjectMeta:
        name = metadata.name or ""
        if len(name) > MAX_POOL_NAME:
            raise ValueError(
                f"name {name!r} is {len(name)} characters; at most {MAX_POOL_NAME}: each claim is named "
                f"<pool>-<{CLAIM_SUFFIX_LENGTH} characters> and that name is its node's "
                "tensor-fusion.ai/node-provisioner label value, which may not pass 63 characters"
            )
        return metadata
