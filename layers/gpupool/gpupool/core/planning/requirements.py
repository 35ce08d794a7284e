"""gpuRequirements (`key operator values`) applied to catalog offerings.

Role: decide which offerings (instance type × zone × capacity type) a pool's
`nodeProvisioner.gpuRequirements` allow. Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt,
read by the one requirement algebra (`core.model.requirements`: Kubernetes' node-selector
semantics; Gt/Lt take one integer and match an integer label); this module checks and
normalises the requirements and labels it hands the algebra.

Keys understood (each offering carries every one of them, so Exists always holds for them):
- `node.kubernetes.io/instance-type`, `topology.kubernetes.io/zone`, `topology.kubernetes.io/region`
- `karpenter.sh/capacity-type`: OnDemand / Spot / Reserved (TensorFusion) or on-demand / spot /
  reserved (Karpenter), case-insensitive; any other value is an error
- `kubernetes.io/arch` (amd64, arm64), `kubernetes.io/os` (linux)
- GPU model: `tensor-fusion.ai/gpu-model` and `karpenter.k8s.aws/instance-gpu-name`, compared
  case-insensitively (T4, A10G, L4, L40S, A100, H100, …)
- `tensor-fusion.ai/gpu-vendor`, `karpenter.k8s.aws/instance-gpu-manufacturer` (nvidia, any case),
  `tensor-fusion.ai/gpu-instance-family`, `karpenter.k8s.aws/instance-family`,
  `tensor-fusion.ai/gpu-instance-size` (the part after the last dot)
- integers for Gt/Lt: `karpenter.k8s.aws/instance-gpu-count`, `instance-gpu-memory` (MiB per GPU),
  `instance-cpu`, `instance-memory` (MiB)
Any other key is ignored for the choice and reported as a reason: TensorFusion passes the
remaining gpuRequirements on to Karpenter's NodeClaim unchanged, so such keys are legitimate
there, but the catalog cannot judge them. An unknown operator or a malformed value is an error.

Must not: know about prices or choose among offerings; raise anything but RequirementError.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpupool.core.catalog.model import CapacityType, Offering
from gpupool.core.model.requirements import KUBERNETES_OPERATORS, RequirementLike, all_hold, integer

__all__ = [
    "CASE_INSENSITIVE_KEYS",
    "KNOWN_KEYS",
    "Matching",
    "RequirementError",
    "RequirementLike",
    "labels_match",
    "normalize_capacity_type",
    "offering_labels",
    "select_matching",
]

KEY_CAPACITY_TYPE = "karpenter.sh/capacity-type"
_AWS = "karpenter.k8s.aws"
_CAPACITY_TYPE_SPELLINGS: dict[str, CapacityType] = {
    "ondemand": "on-demand",
    "on-demand": "on-demand",
    "spot": "spot",
    "reserved": "reserved",
}
CASE_INSENSITIVE_KEYS = frozenset(
    {
        "tensor-fusion.ai/gpu-model",
        f"{_AWS}/instance-gpu-name",
        "tensor-fusion.ai/gpu-vendor",
        f"{_AWS}/instance-gpu-manufacturer",
    }
)
_OPERATORS = KUBERNETES_OPERATORS


class RequirementError(ValueError):
    """A requirement that cannot be evaluated (bad operator, capacity type or Gt/Lt value)."""


def normalize_capacity_type(value: str) -> CapacityType:
    """OnDemand/Spot/Reserved or on-demand/spot/reserved (any case) → Karpenter's spelling."""
    found = _CAPACITY_TYPE_SPELLINGS.get(value.strip().lower())
    if found is None:
        raise RequirementError(
            f"{KEY_CAPACITY_TYPE}: unknown capacity type {value!r} "
            "(expected OnDemand, Spot, Reserved or on-demand, spot, reserved)"
        )
    return found


def offering_labels(offering: Offering) -> dict[str, str]:
    """The node labels an instance from this offering would carry, for requirement matching."""
    it = offering.instance_type
    size = it.name.rsplit(".", 1)[-1]
    return {
        "node.kubernetes.io/instance-type": it.name,
        "topology.kubernetes.io/zone": offering.zone,
        "topology.kubernetes.io/region": offering.region,
        KEY_CAPACITY_TYPE: offering.capacity_type,
        "kubernetes.io/arch": it.arch,
        "kubernetes.io/os": it.os,
        "tensor-fusion.ai/gpu-model": it.gpu_model,
        f"{_AWS}/instance-gpu-name": it.gpu_model,
        "tensor-fusion.ai/gpu-vendor": "nvidia",
        f"{_AWS}/instance-gpu-manufacturer": "nvidia",
        "tensor-fusion.ai/gpu-instance-family": it.family,
        f"{_AWS}/instance-family": it.family,
        "tensor-fusion.ai/gpu-instance-size": size,
        f"{_AWS}/instance-gpu-count": str(it.gpu_count),
        f"{_AWS}/instance-gpu-memory": str(it.vram_gib_per_gpu * 1024),
        f"{_AWS}/instance-cpu": str(it.vcpu),
        f"{_AWS}/instance-memory": str(it.memory_gib * 1024),
    }


KNOWN_KEYS = frozenset(
    {
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        KEY_CAPACITY_TYPE,
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "tensor-fusion.ai/gpu-instance-family",
        f"{_AWS}/instance-family",
        "tensor-fusion.ai/gpu-instance-size",
        f"{_AWS}/instance-gpu-count",
        f"{_AWS}/instance-gpu-memory",
        f"{_AWS}/instance-cpu",
        f"{_AWS}/instance-memory",
    }
    | CASE_INSENSITIVE_KEYS
)


@dataclass(frozen=True)
class _Check:
    """A requirement checked and normalised (capacity types, case-insensitive values)."""

    key: str
    operator: str
    values: tuple[str, ...]


def _integer(requirement: RequirementLike) -> int:
    if len(requirement.values) != 1:
        raise RequirementError(
            f"{requirement.key} {requirement.operator} needs exactly one integer value, "
            f"got {list(requirement.values)}"
        )
    number = integer(requirement.values[0])
    if number is None:
        raise RequirementError(
            f"{requirement.key} {requirement.operator}: {requirement.values[0]!r} is not an integer"
        )
    return number


def _compile(requirement: RequirementLike) -> _Check:
    key, operator = requirement.key, requirement.operator
    if operator not in _OPERATORS:
        raise RequirementError(
            f"{key}: unknown operator {operator!r} (expected one of {', '.join(_OPERATORS)})"
        )
    values = [str(v) for v in requirement.values]
    if operator in ("In", "NotIn") and not values:
        raise RequirementError(f"{key} {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise RequirementError(f"{key} {operator} takes no values")
    if key == KEY_CAPACITY_TYPE:
        values = [normalize_capacity_type(v) for v in values]
    elif key in CASE_INSENSITIVE_KEYS:
        values = [v.lower() for v in values]
    if operator in ("Gt", "Lt"):
        _integer(requirement)
    return _Check(key, operator, tuple(values))


def _all_hold(checks: Sequence[_Check], labels: dict[str, str]) -> bool:
    folded = {
        c.key: labels[c.key].lower() for c in checks if c.key in CASE_INSENSITIVE_KEYS and c.key in labels
    }
    return all_hold(checks, {**labels, **folded} if folded else labels)


@dataclass(frozen=True)
class Matching:
    """The offerings the requirements allow, and the keys we could not judge (with why)."""

    offerings: tuple[Offering, ...]
    ignored: tuple[str, ...]


def select_matching(offerings: Iterable[Offering], requirements: Sequence[RequirementLike]) -> Matching:
    """Offerings satisfying every understood requirement (a logical AND, like Karpenter)."""
    checks = [_compile(r) for r in requirements if r.key in KNOWN_KEYS]
    ignored = tuple(
        f"ignored gpuRequirement {r.key} {r.operator}: not a catalog attribute (passed on to Karpenter as is)"
        for r in requirements
        if r.key not in KNOWN_KEYS
    )
    for r in requirements:
        if r.key not in KNOWN_KEYS and r.operator not in _OPERATORS:
            raise RequirementError(f"{r.key}: unknown operator {r.operator!r}")
    kept = tuple(o for o in offerings if _all_hold(checks, offering_labels(o)))
    return Matching(offerings=kept, ignored=ignored)


def labels_match(labels: dict[str, str], requirements: Sequence[RequirementLike]) -> bool:
    """Whether node `labels` satisfy every understood requirement (keys it cannot judge are ignored)."""
    return _all_hold([_compile(r) for r in requirements if r.key in KNOWN_KEYS], labels)
