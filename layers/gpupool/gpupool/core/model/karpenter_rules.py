"""What Karpenter's API server refuses in a NodeClaim, checked before gpupool writes one.

Role: `nodeclaim_problems(nodeclaim)` lists, one clear line each, what in a karpenter.sh/v1
NodeClaim the published CRD (kubernetes-sigs/karpenter `pkg/apis/crds/`) and Kubernetes' object
rules refuse, so no launch writes a GPUNodeClaim or a NodeClaim the cluster would answer with 422:
`nodeClassRef` (group without `/`, kind and name not empty), at most 100 requirements, each key
a label key (316 characters at most) outside the `karpenter.sh` domain (but
`karpenter.sh/capacity-type` and `karpenter.sh/nodepool`) and not `kubernetes.io/hostname`, its
operator one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte, `In` with values, Gt / Lt /
Gte / Lte with exactly one non-negative integer, `minValues` 1–50 and no more than an `In`'s
values, `expireAfter` a duration or `Never` and `terminationGracePeriod` a duration
(`^([0-9]+(s|m|h))+$`), taints with a label-key key, a label-like value and a known effect, and
the metadata labels (a label value is 63 characters at most). Stricter than the server in one
place, as the CRD means it: each requirement value must be a label value (the CRD writes that
pattern beside the array, where a server applies it to nothing, but a value no label can carry
matches no node). `duration_problem` is the duration check alone.

Must not: build NodeClaims (`decisions.karpenter_nodeclaim` does) or know the sandbox's copy of
the rules (a double checked against this from the other side).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from gpupool.core.goregexp import go_regexp
from gpupool.core.model.foreign import NodeTaint
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodeClaimSpec, KarpenterRequirement

__all__ = [
    "MAX_REQUIREMENTS",
    "OPERATORS",
    "duration_problem",
    "label_problems",
    "nodeclaim_problems",
    "spec_problems",
]

OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
MAX_REQUIREMENTS: Final = 100
_MAX_KEY = 316
_MAX_MIN_VALUES = 50
_ALLOWED_KARPENTER_KEYS = ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")
# Read as Go's regexp reads them (`goregexp`): `$` is the end of the text, so a value with a
# trailing newline ("720h\n") is refused here as the API server refuses it.
_DNS_SUBDOMAIN = go_regexp(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME = go_regexp(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VALUE = go_regexp(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DURATION = go_regexp(r"^([0-9]+(s|m|h))+$")
_INTEGER = go_regexp(r"^[+-]?[0-9]+$")


def _key_problem(key: str, what: str) -> str | None:
    """Why `key` is no label key (prefix a DNS subdomain of ≤ 253, name ≤ 63), or None."""
    prefix, slash, name = key.rpartition("/")
    if not key or len(name) > 63 or not _NAME.match(name):
        return f"{what} {key!r} is not a label key"
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"{what} {key!r} is not a label key (its prefix must be a DNS subdomain)"
    return None


def _value_problem(value: str, what: str) -> str | None:
    if len(value) > 63 or not _VALUE.match(value):
        return f"{what} {value!r} is not a label value (63 characters at most, alphanumeric at both ends)"
    return None


def label_problems(labels: Mapping[str, str], what: str = "label") -> list[str]:
    """Why these labels cannot be stored on an object (Kubernetes' key and value rules)."""
    problems = []
    for key, value in labels.items():
        problems += [
            p for p in (_key_problem(key, f"{what} key"), _value_problem(value, f"{what} {key}")) if p
        ]
    return problems


def duration_problem(field: str, value: str | None, *, never: bool) -> str | None:
    """Why `value` is not a Karpenter duration (`1h30m`, `90s`; `Never` where `never`), or None."""
    if value is None or (never and value == "Never") or _DURATION.match(value):
        return None
    allowed = "a duration such as 720h or 1h30m (s, m, h only)" + (", or Never" if never else "")
    return f"{field} {value!r} must be {allowed}"


def _domain_restricted(key: str) -> bool:
    if key in _ALLOWED_KARPENTER_KEYS:
        return False
    return key.split("/", 1)[0].endswith("karpenter.sh")


def _requirement_problems(index: int, requirement: KarpenterRequirement) -> list[str]:
    key, operator, values = requirement.key, requirement.operator, requirement.values
    where = f"requirement {index} ({key or '<no key>'} {operator})"
    problems: list[str] = []
    if len(key) > _MAX_KEY:
        problems.append(f"{where}: the key is longer than {_MAX_KEY} characters")
    elif (problem := _key_problem(key, "the key")) is not None:
        problems.append(f"{where}: {problem}")
    if _domain_restricted(key):
        problems.append(f'{where}: label domain "karpenter.sh" is restricted')
    if key == "kubernetes.io/hostname":
        problems.append(f'{where}: label "kubernetes.io/hostname" is restricted')
    if operator not in OPERATORS:
        problems.append(f"{where}: the operator must be one of {', '.join(OPERATORS)}")
    if operator == "In" and not values:
        problems.append(f"{where}: operator In needs at least one value")
    if operator in ("Gt", "Lt", "Gte", "Lte") and not (
        len(values) == 1 and _INTEGER.match(values[0]) and int(values[0]) >= 0
    ):
        problems.append(f"{where}: operator {operator} needs exactly one non-negative integer, got {values}")
    if requirement.min_values is not None:
        if not 1 <= requirement.min_values <= _MAX_MIN_VALUES:
            problems.append(f"{where}: minValues must be 1–{_MAX_MIN_VALUES}, got {requirement.min_values}")
        elif operator == "In" and len(values) < requirement.min_values:
            problems.append(
                f"{where}: minValues {requirement.min_values} needs at least that many values, "
                f"got {len(values)}"
            )
    if operator in ("In", "NotIn"):  # Gt / Lt / Gte / Lte have their integer check above
        problems += [p for v in values if (p := _value_problem(v, f"{where}: the value")) is not None]
    return problems


def _taint_problems(kind: str, taints: Sequence[NodeTaint]) -> list[str]:
    problems = []
    for index, taint in enumerate(taints):
        where = f"{kind} {index} ({taint.key or '<no key>'})"
        if (problem := _key_problem(taint.key, "the key")) is not None:
            problems.append(f"{where}: {problem}")
        if taint.value and (problem := _key_problem(taint.value, "the value")) is not None:
            problems.append(f"{where}: {problem.replace('label key', 'taint value')}")
        if taint.effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            problems.append(f"{where}: the effect must be NoSchedule, PreferNoSchedule or NoExecute")
    return problems


def spec_problems(spec: KarpenterNodeClaimSpec) -> list[str]:
    """What Karpenter's NodeClaim CRD refuses in `spec` (see the module docstring)."""
    problems: list[str] = []
    ref = spec.node_class_ref
    if ref is None:
        problems.append("nodeClassRef is required")
    else:
        if not ref.group or "/" in ref.group:
            problems.append(f"nodeClassRef.group {ref.group!r} must be an API group (not empty, no '/')")
        if not ref.kind:
            problems.append("nodeClassRef.kind may not be empty")
        if not ref.name:
            problems.append("nodeClassRef.name may not be empty")
    if len(spec.requirements) > MAX_REQUIREMENTS:
        problems.append(f"{len(spec.requirements)} requirements: at most {MAX_REQUIREMENTS} are allowed")
    for index, requirement in enumerate(spec.requirements):
        problems += _requirement_problems(index, requirement)
    for field, value, never in (
        ("expireAfter", spec.expire_after, True),
        ("terminationGracePeriod", spec.termination_grace_period, False),
    ):
        if (problem := duration_problem(field, value, never=never)) is not None:
            problems.append(problem)
    return (
        problems
        + _taint_problems("taint", spec.taints)
        + _taint_problems("startup taint", spec.startup_taints)
    )


def nodeclaim_problems(nodeclaim: KarpenterNodeClaim) -> list[str]:
    """What the API server with Karpenter's CRDs refuses in `nodeclaim` (empty: it is accepted)."""
    return label_problems(nodeclaim.metadata.labels) + spec_problems(nodeclaim.spec)
