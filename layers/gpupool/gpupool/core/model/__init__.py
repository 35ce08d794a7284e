"""tensor-fusion.ai/v1 resource models, the foreign envelopes gpupool reads, and their loader.

Read manifests with `parse_manifest(dict)` / `load_manifests(text)` (or `Model.model_validate`);
write them with `obj.to_manifest()` (= `model_dump(by_alias=True, exclude_none=True,
mode="json")`). Label and annotation names live in `gpupool.core.model.constants`; CRDs
come from `gpupool.core.model.crd.generate_crds()`.

Names are imported from their modules on first use (PEP 562), so a function that reads pools
and claims does not import, nor build, the models of kinds it never reads (a cold start pays
for each module it imports).

Must not: do I/O or hold decisions (pure data).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from gpupool.core.model.manifest_errors import FieldError, ManifestError
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
        DisruptionBudget,
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

# Each exported name and the module of this package that defines it.
_MODULE_OF: dict[str, str] = {
    "API_VERSION": "base",
    "Condition": "base",
    "GroupKindName": "base",
    "ObjectMeta": "base",
    "ObservedResource": "base",
    "OwnerReference": "base",
    "Resource": "base",
    "TensorFusionObject": "base",
    "TopLevel": "base",
    "ComputingVendor": "cluster",
    "ComputingVendorParams": "cluster",
    "GPUPoolDefinition": "cluster",
    "TensorFusionCluster": "cluster",
    "TensorFusionClusterSpec": "cluster",
    "TensorFusionClusterStatus": "cluster",
    "NodeSelector": "common",
    "NodeSelectorTerm": "common",
    "Requirement": "common",
    "Taint": "common",
    "Node": "foreign",
    "Pod": "foreign",
    "KarpenterNodeClaim": "karpenter",
    "KarpenterNodePool": "karpenter",
    "GPU": "node",
    "GPUNode": "node",
    "GPUNodeInfo": "node",
    "GPUNodeSpec": "node",
    "GPUNodeStatus": "node",
    "GPUStatus": "node",
    "GPUNodeClaim": "nodeclaim",
    "GPUNodeClaimSpec": "nodeclaim",
    "GPUNodeClaimStatus": "nodeclaim",
    "BlockDeviceMapping": "nodeclass",
    "EbsSettings": "nodeclass",
    "GPUNodeClass": "nodeclass",
    "GPUNodeClassSpec": "nodeclass",
    "MetadataOptions": "nodeclass",
    "SelectorTerm": "nodeclass",
    "Budget": "pool",
    "CapacityConfig": "pool",
    "ComponentConfig": "pool",
    "DisruptionBudget": "pool",
    "GPUPool": "pool",
    "GPUPoolSpec": "pool",
    "GPUPoolStatus": "pool",
    "KarpenterNodeClassRef": "pool",
    "NodeCompaction": "pool",
    "NodeDefrag": "pool",
    "NodeManagerConfig": "pool",
    "NodePoolRollingUpdatePolicy": "pool",
    "NodeProvisioner": "pool",
    "Oversubscription": "pool",
    "QosConfig": "pool",
    "ResourceAmount": "pool",
    "GPUResourceQuota": "quota",
    "GPUResourceQuotaSingle": "quota",
    "GPUResourceQuotaSpec": "quota",
    "GPUResourceQuotaTotal": "quota",
    "FieldError": "manifest_errors",
    "ManifestError": "manifest_errors",
    "load_documents": "registry",
    "load_manifests": "registry",
    "parse_as": "registry",
    "parse_manifest": "registry",
    "PlacementConfig": "scheduling",
    "SchedulingConfigTemplate": "scheduling",
    "SchedulingConfigTemplateSpec": "scheduling",
}

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
    "DisruptionBudget",
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


if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name none of them makes

    def __getattr__(name: str) -> Any:
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
