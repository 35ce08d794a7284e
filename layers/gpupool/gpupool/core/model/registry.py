"""Choosing the model for a manifest by apiVersion and kind.

Role: `parse_manifest(obj)` → the typed model, or `ManifestError` listing each invalid field
as `path: reason` (e.g. `spec.capacityConfig.minResources.tflops: not a quantity: 'abc'`; the
error types are `manifest_errors`', re-exported here);
`load_documents(text)` / `load_manifests(text)` for multi-document YAML text (YAML errors
name the line). Also names the foreign kinds that are accepted with a shallow check only.

Must not: read files (callers pass text), log, or touch a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from gpupool.core.model.base import TopLevel
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.manifest_errors import FieldError, ManifestError, describe, field_errors
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.provider import ProviderConfig
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.model.scheduling import SchedulingConfigTemplate
from gpupool.core.model.workload import TensorFusionConnection, TensorFusionWorkload, WorkloadProfile

__all__ = [
    "FOREIGN_KINDS",
    "SHALLOW_KINDS",
    "TENSOR_FUSION_KINDS",
    "FieldError",
    "ManifestError",
    "describe",
    "field_errors",
    "is_shallow_kind",
    "load_documents",
    "load_manifests",
    "model_for",
    "parse_as",
    "parse_manifest",
]

ModelT = TypeVar("ModelT", bound=TopLevel)

# The tensor-fusion.ai/v1 kinds gpupool models in depth (and generates CRDs for).
TENSOR_FUSION_KINDS: tuple[type[TopLevel], ...] = (
    TensorFusionCluster,
    GPUPool,
    GPUNodeClass,
    GPUNodeClaim,
    GPUNode,
    GPU,
    SchedulingConfigTemplate,
    GPUResourceQuota,
    ProviderConfig,
    WorkloadProfile,
    TensorFusionWorkload,
    TensorFusionConnection,
)
# Foreign envelopes the services read (extra fields ignored).
FOREIGN_KINDS: tuple[type[TopLevel], ...] = (Node, Pod, KarpenterNodeClaim, KarpenterNodePool)

_MODELS: dict[tuple[str, str], type[TopLevel]] = {
    (model.API_VERSION, model.KIND): model for model in (*TENSOR_FUSION_KINDS, *FOREIGN_KINDS)
}

# Kinds common in the documents that `validate` accepts with a shallow check only.
SHALLOW_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("v1", "Pod"),
        ("v1", "Node"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.sh/v1", "NodeClaim"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        # TensorFusion kinds gpupool does not model (ClientProfile is deprecated upstream).
        ("tensor-fusion.ai/v1", "ClientProfile"),
    }
)


def model_for(api_version: str, kind: str) -> type[TopLevel] | None:
    """The model class for apiVersion + kind, or None."""
    return _MODELS.get((api_version, kind))


def is_shallow_kind(api_version: str, kind: str) -> bool:
    """Whether `validate` accepts the kind with a shallow check (even where an envelope model exists)."""
    return (api_version, kind) in SHALLOW_KINDS


def parse_manifest(obj: Mapping[str, Any]) -> TopLevel:
    """The typed model for a manifest; ManifestError listing every invalid field otherwise."""
    if not isinstance(obj, Mapping):
        raise ManifestError("<document>", [FieldError("", f"not a mapping: {type(obj).__name__}")])
    what = describe(obj)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        missing = [
            FieldError(key, "required field is missing")
            for key in ("apiVersion", "kind")
            if not isinstance(obj.get(key), str)
        ]
        raise ManifestError(what, missing)
    model = model_for(api_version, kind)
    if model is None:
        raise ManifestError(what, [FieldError("kind", f"unknown kind {kind!r} in {api_version!r}")])
    try:
        return model.model_validate(dict(obj))
    except ValidationError as exc:
        raise ManifestError(what, field_errors(exc)) from None


def parse_as(model: type[ModelT], obj: Mapping[str, Any]) -> ModelT:
    """`obj` as exactly `model` (e.g. parse_as(GPUPool, d) -> GPUPool); ManifestError otherwise."""
    parsed = parse_manifest(obj)
    if not isinstance(parsed, model):
        raise ManifestError(describe(obj), [FieldError("kind", f"expected {model.KIND}, got {parsed.KIND}")])
    return parsed


def load_documents(text: str) -> list[Any]:
    """The non-empty YAML documents in `text`; ManifestError naming the line on bad YAML."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ManifestError("<yaml>", [FieldError("", f"invalid YAML: {where}{problem}")]) from None
    return [document for document in documents if document is not None]


def load_manifests(text: str) -> list[TopLevel]:
    """Every document in a multi-document YAML text as a typed model (first error raises)."""
    return [parse_manifest(document) for document in load_documents(text)]
