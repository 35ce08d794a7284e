"""tensor-fusion.ai/v1 resource models, the foreign envelopes gpupool reads, and their loader.

Read manifests with `parse_manifest(dict)` / `load_manifests(text)` (or `Model.model_validate`);
write them with `obj.to_manifest()` (= `model_dump(by_alias=True, exclude_none=True,
mode="json")`). Label and annotation names live in `gpupool.core.model.constants`; CRDs
come from `gpupool.core.model.crd.generate_crds()`.

Must not: do I/O or hold decisions (pure data).
"""

from gpupool.core.model.base import (
    API_VERSION,
    Condition,
    GroupKindName,
    ObjectMeta,
    ObservedResource,
    OwnerReference,
    Resource,
    TensorFusionObject,
    TopLevel,
)
from gpupool.core.model.cluster import (
    ComputingVendor,
    ComputingVendorParams,
    GPUPoolDefinition,
    TensorFusionCluster,
    TensorFusionClusterSpec,
    TensorFusionClusterStatus,
)
from gpupool.core.model.common import NodeSelector, NodeSelectorTerm, Requirement, Taint
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.node import GPU, GPUNode, GPUNodeInfo, GPUNodeSpec, GPUNodeStatus, GPUStatus
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimSpec, GPUNodeClaimStatus
from gpupool.core.model.nodeclass import (
    BlockDeviceMapping,
    EbsSettings,
    GPUNodeClass,
    GPUNodeClassSpec,
    MetadataOptions,
    SelectorTerm,
)
from gpupool.core.model.pool import (
    Budget,
    CapacityConfig,
    ComponentConfig,
    GPUPool,
    GPUPoolSpec,
    GPUPoolStatus,
    KarpenterNodeClassRef,
    NodeCompaction,
    NodeDefrag,
    NodeManagerConfig,
    NodePoolRollingUpdatePolicy,
    NodeProvisioner,
    Oversubscription,
    QosConfig,
    ResourceAmount,
)
from gpupool.core.model.quota import (
    GPUResourceQuota,
    GPUResourceQuotaSingle,
    GPUResourceQuotaSpec,
    GPUResourceQuotaTotal,
)
from gpupool.core.model.registry import (
    FieldError,
    ManifestError,
    load_documents,
    load_manifests,
    parse_as,
    parse_manifest,
)
from gpupool.core.model.scheduling import (
    PlacementConfig,
    SchedulingConfigTemplate,
    SchedulingConfigTemplateSpec,
)

__all__ = [
    "API_VERSION",
    "GPU",
    "BlockDeviceMapping",
    "Budget",
    "CapacityConfig",
    "ComponentConfig",
    "ComputingVendor",
    "ComputingVendorParams",
    "Condition",
    "EbsSettings",
    "FieldError",
    "GPUNode",
    "GPUNodeClaim",
    "GPUNodeClaimSpec",
    "GPUNodeClaimStatus",
    "GPUNodeClass",
    "GPUNodeClassSpec",
    "GPUNodeInfo",
    "GPUNodeSpec",
    "GPUNodeStatus",
    "GPUPool",
    "GPUPoolDefinition",
    "GPUPoolSpec",
    "GPUPoolStatus",
    "GPUResourceQuota",
    "GPUResourceQuotaSingle",
    "GPUResourceQuotaSpec",
    "GPUResourceQuotaTotal",
    "GPUStatus",
    "GroupKindName",
    "KarpenterNodeClaim",
    "KarpenterNodeClassRef",
    "KarpenterNodePool",
    "ManifestError",
    "MetadataOptions",
    "Node",
    "NodeCompaction",
    "NodeDefrag",
    "NodeManagerConfig",
    "NodePoolRollingUpdatePolicy",
    "NodeProvisioner",
    "NodeSelector",
    "NodeSelectorTerm",
    "ObjectMeta",
    "ObservedResource",
    "Oversubscription",
    "OwnerReference",
    "PlacementConfig",
    "Pod",
    "QosConfig",
    "Requirement",
    "Resource",
    "ResourceAmount",
    "SchedulingConfigTemplate",
    "SchedulingConfigTemplateSpec",
    "SelectorTerm",
    "Taint",
    "TensorFusionCluster",
    "TensorFusionClusterSpec",
    "TensorFusionClusterStatus",
    "TensorFusionObject",
    "TopLevel",
    "load_documents",
    "load_manifests",
    "parse_as",
    "parse_manifest",
]
