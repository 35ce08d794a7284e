"""Karpenter's CEL validation rules, each written as a Python check for the embedded API server.

Role: `KARPENTER_RULES` maps the exact text of every `x-kubernetes-validations` rule in
Karpenter's karpenter.sh/v1 NodeClaim and NodePool CRDs (kubernetes-sigs/karpenter
`pkg/apis/crds/`, at 2266468104f36373ed002241afaee2d3bbc26078) to a check of `self` (and
`oldSelf` for the transition rules), following CEL where it decides the outcome (`cel`: a
missing optional field read is an error, `int()` is Go's ParseInt, `all()` and the logical
operators as CEL combines errors). The rule texts and the messages the sandbox's CRDs carry
(`gpupool.sandbox.crds.karpenter_schemas`) are Karpenter's; the checks are gpupool's own.

Must not: hold anything but the checks (the schemas say where each rule applies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpupool.core.goregexp import go_regexp
from gpupool.sandbox.kubeapi.cel import RuleCheck, RuleError, cel_all, cel_int, field, has

__all__ = ["KARPENTER_RULES"]

_ALLOWED_KARPENTER_KEYS = ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")
_DOMAIN = go_regexp(r"^([^/]+)")
_RANGE_OPERATORS = ("Gt", "Lt", "Gte", "Lte")


def _domain_allowed(key: Any) -> bool:
    """`key in [...] || !key.find("^([^/]+)").endsWith("karpenter.sh")`."""
    if not isinstance(key, str):
        raise RuleError("no such overload")
    if key in _ALLOWED_KARPENTER_KEYS:
        return True
    found = _DOMAIN.search(key)
    return not (found.group(0) if found else "").endswith("karpenter.sh")


def _size(value: Any) -> int:
    if not isinstance(value, (list, Mapping, str)):
        raise RuleError("no such overload")
    return len(value)


def _in_has_values(requirement: Any) -> bool:
    """`x.operator == 'In' ? x.values.size() != 0 : true`."""
    if field(requirement, "operator") != "In":
        return True
    return _size(field(requirement, "values")) != 0


def _range_single_non_negative(requirement: Any) -> bool:
    """`(Gt|Lt|Gte|Lte) ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true` — `&&` is
    false when either side is, an error only when neither is false."""
    if field(requirement, "operator") not in _RANGE_OPERATORS:
        return True
    errors: list[RuleError] = []
    try:
        if _size(field(requirement, "values")) != 1:
            return False
    except RuleError as error:
        errors.append(error)
    try:
        values = field(requirement, "values")
        if not isinstance(values, list) or not values:
            raise RuleError("index out of bounds: 0")
        if cel_int(values[0]) < 0:
            return False
    except RuleError as error:
        errors.append(error)
    if errors:
        raise errors[0]
    return True


def _min_values_within(requirement: Any) -> bool:
    """`(x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true`."""
    if field(requirement, "operator") != "In" or not has(requirement, "minValues"):
        return True
    minimum = field(requirement, "minValues")
    if not isinstance(minimum, int):
        raise RuleError("no such overload")
    return _size(field(requirement, "values")) >= minimum


def _keys(value: Any) -> list[Any]:
    if not isinstance(value, Mapping):
        raise RuleError("no such overload")
    return list(value)


def _items(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise RuleError("no such overload")
    return value


def _static_limits_only_nodes(spec: Any) -> bool:
    """`!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 ||
    (size(self.limits) == 1 && 'nodes' in self.limits))`."""
    if not has(spec, "replicas") or not has(spec, "limits"):
        return True
    limits = field(spec, "limits")
    return _size(limits) == 0 or (_size(limits) == 1 and "nodes" in limits)


KARPENTER_RULES: Final[Mapping[str, RuleCheck]] = {
    # NodeClaim.spec (and nothing else): immutable once created.
    "self == oldSelf": lambda self, old: bool(self == old),
    # nodeClassRef.group / kind / name
    "self != ''": lambda self, old: self != "",
    # requirements[*].key
    'self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
    '!self.find("^([^/]+)").endsWith("karpenter.sh")': lambda self, old: _domain_allowed(self),
    'self != "kubernetes.io/hostname"': lambda self, old: self != "kubernetes.io/hostname",
    'self != "karpenter.sh/nodepool"': lambda self, old: self != "karpenter.sh/nodepool",
    # requirements
    "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)": lambda self, old: cel_all(
        _items(self), _in_has_values
    ),
    "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte')"
    " ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)": lambda self, old: cel_all(
        _items(self), _range_single_non_negative
    ),
    "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)": (
        lambda self, old: cel_all(_items(self), _min_values_within)
    ),
    # NodePool.spec.template.metadata.labels
    'self.all(x, x in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
    '!x.find("^([^/]+)").endsWith("karpenter.sh"))': lambda self, old: cel_all(_keys(self), _domain_allowed),
    'self.all(x, x != "karpenter.sh/nodepool")': lambda self, old: cel_all(
        _keys(self), lambda key: key != "karpenter.sh/nodepool"
    ),
    'self.all(x, x != "kubernetes.io/hostname")': lambda self, old: cel_all(
        _keys(self), lambda key: key != "kubernetes.io/hostname"
    ),
    # NodePool.spec.template.spec.nodeClassRef
    "self.group == oldSelf.group": lambda self, old: bool(field(self, "group") == field(old, "group")),
    "self.kind == oldSelf.kind": lambda self, old: bool(field(self, "kind") == field(old, "kind")),
    # NodePool.spec.disruption.budgets
    "self.all(x, has(x.schedule) == has(x.duration))": lambda self, old: cel_all(
        _items(self), lambda budget: has(budget, "schedule") == has(budget, "duration")
    ),
    # NodePool.spec: static (replicas) and dynamic NodePools
    "has(self.replicas) == has(oldSelf.replicas)": lambda self, old: (
        has(self, "replicas") == has(old, "replicas")
    ),
    "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
    "(size(self.limits) == 1 && 'nodes' in self.limits))": lambda self, old: _static_limits_only_nodes(self),
    "!has(self.replicas) || !has(self.weight)": lambda self, old: (
        not has(self, "replicas") or not has(self, "weight")
    ),
}
