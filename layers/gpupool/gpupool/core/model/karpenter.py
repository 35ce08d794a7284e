"""Envelopes of Karpenter's karpenter.sh/v1 NodeClaim and NodePool.

Role: the fields gpupool reads and writes when it provisions through Karpenter (requirements,
resource requests, taints, node class reference, providerID/nodeName, NodePool template and
limits); everything else is ignored on read. Requirements here are Karpenter's own (they are
not re-validated: Karpenter owns that schema).

Must not: build NodeClaims from pools (a core decision module does) or call Kubernetes.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import Condition, ForeignModel, Loose, Qty
from gpupool.core.model.foreign import ForeignObject, NodeTaint, ResourceRequirements

__all__ = [
    "KarpenterNodeClaim",
    "KarpenterNodeClaimSpec",
    "KarpenterNodeClaimStatus",
    "KarpenterNodePool",
    "KarpenterNodePoolSpec",
    "KarpenterRequirement",
    "NodeClaimTemplate",
    "NodeClaimTemplateMetadata",
    "NodeClassReference",
]


class KarpenterRequirement(ForeignModel):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)
    min_values: int | None = None


class NodeClassReference(ForeignModel):
    """A NodeClaim's `spec.nodeClassRef` (Karpenter v1's NodeClassReference: no version)."""

    group: str
    kind: str
    name: str


class KarpenterNodeClaimSpec(ForeignModel):
    node_class_ref: NodeClassReference | None = None
    requirements: list[KarpenterRequirement] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    taints: list[NodeTaint] = Field(default_factory=list)
    startup_taints: list[NodeTaint] = Field(default_factory=list)
    expire_after: str | None = None
    termination_grace_period: str | None = None


class KarpenterNodeClaimStatus(ForeignModel):
    provider_id: str | None = Field(default=None, alias="providerID")
    node_name: str | None = None
    image_id: str | None = Field(default=None, alias="imageID")
    capacity: dict[str, Qty] = Field(default_factory=dict)
    allocatable: dict[str, Qty] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)


class KarpenterNodeClaim(ForeignObject):
    """karpenter.sh/v1 NodeClaim."""

    API_VERSION: ClassVar[str] = "karpenter.sh/v1"
    KIND: ClassVar[str] = "NodeClaim"

    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodeClaim"] = "NodeClaim"
    spec: KarpenterNodeClaimSpec = Field(default_factory=KarpenterNodeClaimSpec)
    status: KarpenterNodeClaimStatus = Field(default_factory=KarpenterNodeClaimStatus)


class NodeClaimTemplateMetadata(ForeignModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class NodeClaimTemplate(ForeignModel):
    metadata: NodeClaimTemplateMetadata = Field(default_factory=NodeClaimTemplateMetadata)
    spec: KarpenterNodeClaimSpec = Field(default_factory=KarpenterNodeClaimSpec)


class KarpenterNodePoolSpec(ForeignModel):
    template: NodeClaimTemplate = Field(default_factory=NodeClaimTemplate)
    limits: dict[str, Qty] = Field(default_factory=dict)
    disruption: Loose | None = None
    weight: int | None = None


class KarpenterNodePool(ForeignObject):
    """karpenter.sh/v1 NodePool."""

    API_VERSION: ClassVar[str] = "karpenter.sh/v1"
    KIND: ClassVar[str] = "NodePool"

    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodePool"] = "NodePool"
    spec: KarpenterNodePoolSpec = Field(default_factory=KarpenterNodePoolSpec)
    status: Loose = Field(default_factory=dict)
