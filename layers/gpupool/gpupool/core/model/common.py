"""Node selection vocabulary shared by pools, claims and foreign objects.

Role: requirements (key/operator/values with Kubernetes' operator rules), the pool's
provisioner requirements (TensorFusion's key and operator lists, as lenient as its schema),
taints, and the core v1 NodeSelector and meta v1 LabelSelector shapes, exactly as
TensorFusion and Kubernetes spell them.

Must not: evaluate requirements against offerings or nodes (that is a core decision module).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpupool.core.model.base import SpecModel

__all__ = [
    "PROVISIONER_EXTENSION_KEYS",
    "PROVISIONER_KEYS",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NodeSelector",
    "NodeSelectorTerm",
    "Operator",
    "ProvisionerRequirement",
    "Requirement",
    "Taint",
    "TaintEffect",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

# The keys TensorFusion's CRD lists for gpuRequirements / cpuRequirements (NodeRequirementKey).
PROVISIONER_KEYS: frozenset[str] = frozenset(
    {
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "karpenter.sh/capacity-type",
        "tensor-fusion.ai/gpu-vendor",
        "tensor-fusion.ai/gpu-instance-family",
        "tensor-fusion.ai/gpu-instance-size",
    }
)
# Keys gpupool also understands (a deliberate extension: accepted with a warning by `validate`).
PROVISIONER_EXTENSION_KEYS: frozenset[str] = frozenset({"tensor-fusion.ai/gpu-model"})
_EXTENSION_PREFIXES = ("karpenter.k8s.aws/",)
# TensorFusion lists In, Exists, DoesNotExist, Gt, Lt; gpupool also takes NotIn (Kubernetes' meaning).
_PROVISIONER_OPERATORS = ("In", "Exists", "DoesNotExist", "Gt", "Lt", "NotIn")


class Requirement(SpecModel):
    """A node requirement: `key operator values` (TensorFusion's Requirement)."""

    key: str
    operator: Operator = "In"
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> Requirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        single_integer = len(self.values) == 1 and self.values[0].lstrip("-").isdigit()
        if self.operator in ("Gt", "Lt") and not single_integer:
            raise ValueError(f"operator {self.operator} needs exactly one integer value")
        return self


def _provisioner_key_known(key: str) -> bool:
    return key in PROVISIONER_KEYS or key in PROVISIONER_EXTENSION_KEYS or key.startswith(_EXTENSION_PREFIXES)


class ProvisionerRequirement(Requirement):
    """A pool's gpuRequirements / cpuRequirements entry, as TensorFusion's schema takes it: the key
    must be one TensorFusion lists (or one gpupool deliberately adds); `In` without values is
    accepted as TensorFusion accepts it (it matches nothing, as in Kubernetes)."""

    key: str = ""

    @model_validator(mode="after")
    def _values_fit_operator(self) -> ProvisionerRequirement:
        if not self.key:
            raise ValueError("a requirement needs a key")
        if not _provisioner_key_known(self.key):
            known = ", ".join(sorted(PROVISIONER_KEYS | PROVISIONER_EXTENSION_KEYS))
            raise ValueError(f"unknown requirement key {self.key!r} (TensorFusion lists: {known})")
        if self.operator not in _PROVISIONER_OPERATORS:
            raise ValueError(f"operator {self.operator} is not one TensorFusion lists")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        single_integer = len(self.values) == 1 and self.values[0].lstrip("-").isdigit()
        if self.operator in ("Gt", "Lt") and not single_integer:
            raise ValueError(f"operator {self.operator} needs exactly one integer value")
        return self


class Taint(SpecModel):
    """A node taint (TensorFusion defaults the effect to NoSchedule; its schema lets the key be
    empty, so gpupool reads such a taint and never applies it: see `has_key`)."""

    key: str = ""
    value: str | None = None
    effect: TaintEffect = "NoSchedule"

    @property
    def has_key(self) -> bool:
        return bool(self.key)


class NodeSelectorTerm(SpecModel):
    """core v1 NodeSelectorTerm: the expressions are ANDed."""

    match_expressions: list[Requirement] = Field(default_factory=list)
    match_fields: list[Requirement] = Field(default_factory=list)


class NodeSelector(SpecModel):
    """core v1 NodeSelector: the terms are ORed."""

    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class LabelSelectorRequirement(SpecModel):
    """meta v1 LabelSelectorRequirement (operators In, NotIn, Exists, DoesNotExist)."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(SpecModel):
    """meta v1 LabelSelector: matchLabels and matchExpressions, ANDed."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)
