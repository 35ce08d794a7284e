"""One requirement algebra: when a node's labels satisfy `key operator values` requirements.

Role: the one meaning of a node-selector requirement for every reader (the allocator's pod
affinity, planning's gpuRequirements on catalog offerings, AutoSelect's candidates and the
simulated Karpenter):
- `holds(operator, values, value)` — one requirement against one label value (None: the node
  lacks the label), as Kubernetes' `labels.Requirement.Matches` reads a NodeSelectorRequirement:
  In (present, one of the values), NotIn (absent, or none of them), Exists, DoesNotExist, Gt / Lt
  (present, and label and the one value both base-10 64-bit integers as Go's `strconv.ParseInt`
  reads them, compared strictly); plus Karpenter's Gte / Lte (the same, inclusive). An unknown
  operator, or Gt…Lte without exactly one integer value, holds for no node (Kubernetes drops a
  term it cannot parse).
- `failing(requirements, labels, judged=…)` / `all_hold(…)` — requirements ANDed; a requirement
  whose key the caller cannot judge (`judged` given and the key not in it) is left to whoever
  can (Karpenter's NodeClaim, the node's kubelet) and holds.
- `pod_node_terms(node_selector, affinity)` / `terms_allow(terms, labels, judged=…)` — a pod's
  nodeSelector and required node affinity as ORed terms, and whether labels satisfy them.
- `min_values_shortfall(requirements, allowed)` — Karpenter's `minValues`: the requirements whose
  key takes fewer distinct values than their minValues among the allowed candidates' label sets
  (Karpenter does not launch then).
Callers normalise spellings first (capacity types, case-insensitive GPU names); the algebra
compares exact strings.

Must not: know any label's meaning, normalise or validate spellings (the callers and the models
do), or raise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

__all__ = [
    "KARPENTER_OPERATORS",
    "KUBERNETES_OPERATORS",
    "Expression",
    "Operator",
    "RequirementLike",
    "all_hold",
    "failing",
    "holds",
    "integer",
    "min_values_shortfall",
    "pod_node_terms",
    "terms_allow",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
# Kubernetes' NodeSelectorOperator values; Karpenter adds Gte and Lte.
KUBERNETES_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
KARPENTER_OPERATORS: Final = (*KUBERNETES_OPERATORS, "Gte", "Lte")

_INT64: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_RANGES: Final[dict[str, Callable[[int, int], bool]]] = {
    "Gt": lambda have, bound: have > bound,
    "Lt": lambda have, bound: have < bound,
    "Gte": lambda have, bound: have >= bound,
    "Lte": lambda have, bound: have <= bound,
}


class RequirementLike(Protocol):
    """What the algebra reads of a requirement (TensorFusion's, Karpenter's, a pod's affinity)."""

    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def values(self) -> Sequence[str]: ...


def integer(text: str | None) -> int | None:
    """`text` as Go's `strconv.ParseInt(text, 10, 64)` reads it (ASCII digits, an optional sign,
    within 64 bits); None when it does not parse."""
    if text is None or _INT64.fullmatch(text) is None:
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def holds(operator: str, values: Collection[str], value: str | None) -> bool:
    """Whether a node whose label is `value` (None: no such label) satisfies `operator values`."""
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    compare = _RANGES.get(operator)
    if compare is None or len(values) != 1:
        return False
    have, bound = integer(value), integer(next(iter(values)))
    return have is not None and bound is not None and compare(have, bound)


def failing(
    requirements: Iterable[RequirementLike],
    labels: Mapping[str, str],
    *,
    judged: Collection[str] | None = None,
) -> RequirementLike | None:
    """The first requirement `labels` do not satisfy (None: all hold). With `judged`, a
    requirement on a key outside it holds (the caller cannot judge it)."""
    for requirement in requirements:
        if judged is not None and requirement.key not in judged:
            continue
        if not holds(requirement.operator, requirement.values, labels.get(requirement.key)):
            return requirement
    return None


def all_hold(
    requirements: Iterable[RequirementLike],
    labels: Mapping[str, str],
    *,
    judged: Collection[str] | None = None,
) -> bool:
    """Whether `labels` satisfy every requirement (see `failing`)."""
    return failing(requirements, labels, judged=judged) is None


class MinValuesLike(RequirementLike, Protocol):
    @property
    def min_values(self) -> int | None: ...


def min_values_shortfall(
    requirements: Sequence[MinValuesLike], allowed: Iterable[Mapping[str, str]]
) -> list[tuple[MinValuesLike, int]]:
    """Karpenter's minValues: each requirement with one, paired with how many distinct values of
    its key the `allowed` label sets (those of the candidates that satisfy the requirements)
    carry, where that is fewer than its minValues."""
    wanted = [r for r in requirements if r.min_values is not None]
    seen: dict[str, set[str]] = {r.key: set() for r in wanted}
    for labels in allowed if wanted else ():
        for key, found in seen.items():
            if key in labels:
                found.add(labels[key])
    return [(r, len(seen[r.key])) for r in wanted if len(seen[r.key]) < (r.min_values or 0)]


@dataclass(frozen=True, slots=True)
class Expression:
    """One requirement as the algebra reads it, from wherever it was written (a pod's affinity)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


def pod_node_terms(
    node_selector: Mapping[str, str], affinity: Mapping[str, Any] | None
) -> tuple[tuple[Expression, ...], ...]:
    """A pod's nodeSelector and required node affinity as terms (ORed) of expressions (ANDed):
    each term of `requiredDuringSchedulingIgnoredDuringExecution` with every nodeSelector entry
    (`key In [value]`) added, or the nodeSelector alone when the pod has no required term."""
    selected = tuple(Expression(key, "In", (value,)) for key, value in node_selector.items())
    node_affinity = (affinity or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = [
        tuple(
            Expression(
                str(e.get("key")), str(e.get("operator")), tuple(str(v) for v in e.get("values") or ())
            )
            for e in term.get("matchExpressions") or ()
        )
        for term in required.get("nodeSelectorTerms") or ()
    ]
    return tuple((*selected, *term) for term in terms) if terms else (selected,)


def terms_allow(
    terms: Sequence[Sequence[RequirementLike]],
    labels: Mapping[str, str],
    *,
    judged: Collection[str] | None = None,
) -> bool:
    """Whether any term (ORed) holds for `labels` (see `failing` for `judged`)."""
    return any(all_hold(term, labels, judged=judged) for term in terms)
