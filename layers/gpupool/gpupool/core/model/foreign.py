"""Envelopes of objects Kubernetes owns: core v1 Node and Pod, policy/v1 PodDisruptionBudget.

Role: read the few fields gpupool's services act on (labels, taints, conditions, capacity,
providerID; pod placement and resources); everything else is ignored on read. These are
not written back from these models — patch the fields you change.

Must not: validate these kinds in depth (Kubernetes and Karpenter own their schemas).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from gpupool.core.model.base import Condition, ForeignModel, Loose, ObjectMeta, Qty, TopLevel
from gpupool.core.model.common import LabelSelector

__all__ = [
    "Container",
    "ForeignObject",
    "Node",
    "NodeSpec",
    "NodeStatus",
    "NodeTaint",
    "Pod",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "PodSpec",
    "PodStatus",
    "ResourceRequirements",
    "Toleration",
]


class ForeignObject(TopLevel):
    """A top-level object another system owns: fields we do not name are ignored on read."""

    model_config = ConfigDict(extra="ignore")

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


class NodeTaint(ForeignModel):
    key: str
    value: str | None = None
    effect: str
    time_added: str | None = None


class NodeSpec(ForeignModel):
    unschedulable: bool = False
    taints: list[NodeTaint] = Field(default_factory=list)
    provider_id: str | None = Field(default=None, alias="providerID")


class NodeStatus(ForeignModel):
    conditions: list[Condition] = Field(default_factory=list)
    capacity: dict[str, Qty] = Field(default_factory=dict)
    allocatable: dict[str, Qty] = Field(default_factory=dict)
    node_info: Loose | None = None


class Node(ForeignObject):
    """core v1 Node."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Node"

    api_version: Literal["v1"] = "v1"
    kind: Literal["Node"] = "Node"
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    def is_ready(self) -> bool:
        for condition in self.status.conditions:  # a loop: asked of every node of a pool, per read
            if condition.type == "Ready" and condition.status == "True":
                return True
        return False


class ResourceRequirements(ForeignModel):
    requests: dict[str, Qty] = Field(default_factory=dict)
    limits: dict[str, Qty] = Field(default_factory=dict)


class Container(ForeignModel):
    name: str = ""
    image: str | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)


class Toleration(ForeignModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class PodSpec(ForeignModel):
    node_name: str | None = None
    scheduler_name: str | None = None
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Loose | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    priority_class_name: str | None = None


class PodStatus(ForeignModel):
    phase: str | None = None
    conditions: list[Condition] = Field(default_factory=list)
    nominated_node_name: str | None = None


class PodDisruptionBudgetSpec(ForeignModel):
    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(ForeignModel):
    disruptions_allowed: int = 0


class PodDisruptionBudget(ForeignObject):
    """policy/v1 PodDisruptionBudget: which pods it selects and how many may be evicted now
    (`status.disruptionsAllowed`, kept by the disruption controller)."""

    API_VERSION: ClassVar[str] = "policy/v1"
    KIND: ClassVar[str] = "PodDisruptionBudget"
    NAMESPACED: ClassVar[bool] = True

    api_version: Literal["policy/v1"] = "policy/v1"
    kind: Literal["PodDisruptionBudget"] = "PodDisruptionBudget"
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)


class Pod(ForeignObject):
    """core v1 Pod."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Pod"
    NAMESPACED: ClassVar[bool] = True

    api_version: Literal["v1"] = "v1"
    kind: Literal["Pod"] = "Pod"
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)
