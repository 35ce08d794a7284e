"""Node selection vocabulary shared by pools, claims and foreign objects.

Role: requirements (key/operator/values with Kubernetes' operator rules), taints, and the
core v1 NodeSelector shape, exactly as TensorFusion and Kubernetes spell them.

Must not: evaluate requirements against offerings or nodes (that is a core decision module).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpupool.core.model.base import SpecModel

__all__ = [
    "NodeSelector",
    "NodeSelectorTerm",
    "Operator",
    "Requirement",
    "Taint",
    "TaintEffect",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


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


class Taint(SpecModel):
    """A node taint (TensorFusion defaults the effect to NoSchedule)."""

    key: str
    value: str | None = None
    effect: TaintEffect = "NoSchedule"


class NodeSelectorTerm(SpecModel):
    """core v1 NodeSelectorTerm: the expressions are ANDed."""

    match_expressions: list[Requirement] = Field(default_factory=list)
    match_fields: list[Requirement] = Field(default_factory=list)


class NodeSelector(SpecModel):
    """core v1 NodeSelector: the terms are ORed."""

    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)
