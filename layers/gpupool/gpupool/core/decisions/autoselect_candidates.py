"""AutoSelect's candidates: where a node like the template may be made, best first.

Role: `launched_placement(template, node)` — what Karpenter launched for the template: instance
type, zone and capacity type from the labels Karpenter merges into a NodeClaim at launch (then
the node's labels; the requirements' first `In` values only as a last resort — a NodeClaim
Karpenter made from a NodePool lists every compatible type, price-ordered, and usually no zone).
`candidates(pod, template, node, nodepool, offerings)` — the (instance type, zone) pairs an
expansion for `pod` may be pinned to: the launched type first (in the launched zone first), then
the types the template's requirements list (Karpenter's price order), then those the NodePool
names, then the catalog's types its requirements allow, cheapest first; zones: the launched
zone, then those the NodePool names, or — when it names none — every zone of the region the
catalog knows. Every pair must satisfy the NodePool's requirements (In, NotIn, Exists,
DoesNotExist, Gt, Lt, Gte, Lte on the instance type, zone and the catalog's labels of the type;
keys the catalog cannot judge are left to Karpenter) and the pod's nodeSelector / required node
affinity; a type the catalog prices is only paired with the zones it is offered in.
`capacity_type_of(placement)` is the launched capacity type in gpupool's spelling (OnDemand /
Spot / Reserved), for the unavailable-offerings memory.

Must not: perform I/O, read the clock, or decide which candidate is tried (`decisions.autoselect`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Final

from gpupool.core.decisions.autoselect_fit import required_in
from gpupool.core.decisions.karpenter_nodeclaim import placement_of
from gpupool.core.model.constants import KEY_CAPACITY_TYPE, KEY_INSTANCE_TYPE, KEY_REGION, KEY_ZONE
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool, KarpenterRequirement
from gpupool.core.planning.plan import OfferingRef

__all__ = ["Candidate", "candidates", "capacity_type_of", "launched_placement"]

Candidate = tuple[str, str]  # (instance type, zone)
_KARPENTER_CAPACITY: Final = {"on-demand": "OnDemand", "spot": "Spot", "reserved": "Reserved"}
_RANGES: dict[str, Callable[[int, int], bool]] = {
    "Gt": lambda value, bound: value > bound,
    "Lt": lambda value, bound: value < bound,
    "Gte": lambda value, bound: value >= bound,
    "Lte": lambda value, bound: value <= bound,
}


def launched_placement(template: KarpenterNodeClaim, node: Node) -> dict[str, str]:
    """Instance type, zone, region and capacity type the template's node was launched with."""
    labels = node.metadata.labels
    from_claim = placement_of(template)  # the NodeClaim's labels, else its first In values
    from_labels = {
        k: v for k in (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_REGION, KEY_CAPACITY_TYPE) if (v := labels.get(k))
    }
    claim_labels = {k: v for k, v in template.metadata.labels.items() if k in from_claim}
    return {**from_claim, **from_labels, **claim_labels}


def capacity_type_of(placement: dict[str, str]) -> str | None:
    """The launched capacity type as gpupool's offerings spell it (None when unknown)."""
    value = placement.get(KEY_CAPACITY_TYPE)
    return _KARPENTER_CAPACITY.get(value.lower()) if value else None


def _integer(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _holds(requirement: KarpenterRequirement, labels: dict[str, str]) -> bool:
    if requirement.key not in labels:
        return requirement.operator in ("NotIn", "DoesNotExist") or requirement.key not in (
            KEY_INSTANCE_TYPE,
            KEY_ZONE,
        )
    value, values = labels[requirement.key], requirement.values
    match requirement.operator:
        case "In":
            return value in values
        case "NotIn":
            return value not in values
        case "Exists":
            return True
        case "DoesNotExist":
            return False
        case operator if operator in _RANGES:
            number, bound = _integer(value), _integer(values[0] if len(values) == 1 else None)
            return number is not None and bound is not None and _RANGES[operator](number, bound)
        case _:
            return False


def _in_values(requirements: Sequence[KarpenterRequirement], key: str) -> list[str]:
    return [v for r in requirements if r.key == key and r.operator == "In" for v in r.values]


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def candidates(
    pod: Pod,
    template: KarpenterNodeClaim,
    node: Node,
    nodepool: KarpenterNodePool | None,
    offerings: Sequence[OfferingRef],
) -> list[Candidate]:
    """The (instance type, zone) pairs an expansion for `pod` may be pinned to, best first."""
    launched = launched_placement(template, node)
    pool_reqs = list(nodepool.spec.template.spec.requirements) if nodepool else []
    cheapest: dict[str, Decimal] = {}
    zones_of: dict[str, set[str]] = {}
    labels_of: dict[str, dict[str, str]] = {}
    for offering in offerings:
        price = Decimal(offering.hourly_price)
        cheapest[offering.instance_type] = min(price, cheapest.get(offering.instance_type, price))
        zones_of.setdefault(offering.instance_type, set()).add(offering.zone or "")
        labels_of.setdefault(
            offering.instance_type, {**offering.labels, KEY_INSTANCE_TYPE: offering.instance_type}
        )
    by_price = sorted(cheapest, key=lambda name: (cheapest[name], name))
    types = _unique(
        [
            launched.get(KEY_INSTANCE_TYPE, ""),
            *_in_values(template.spec.requirements, KEY_INSTANCE_TYPE),
            *_in_values(pool_reqs, KEY_INSTANCE_TYPE),
            *by_price,
        ]
    )
    named_zones = _in_values(pool_reqs, KEY_ZONE)
    region_zones = sorted({o.zone for o in offerings if o.zone})
    zones = _unique([launched.get(KEY_ZONE, ""), *(named_zones or region_zones)])
    wanted_types, wanted_zones = required_in(pod, KEY_INSTANCE_TYPE), required_in(pod, KEY_ZONE)
    type_reqs = [r for r in pool_reqs if r.key not in (KEY_ZONE, KEY_CAPACITY_TYPE, KEY_REGION)]
    zone_reqs = [r for r in pool_reqs if r.key == KEY_ZONE]
    found: list[Candidate] = []
    for instance_type in types:
        if wanted_types is not None and instance_type not in wanted_types:
            continue
        labels = labels_of.get(instance_type, {KEY_INSTANCE_TYPE: instance_type})
        if not all(_holds(r, labels) for r in type_reqs):
            continue
        offered = zones_of.get(instance_type)
        for zone in zones:
            if wanted_zones is not None and zone not in wanted_zones:
                continue
            if offered is not None and zone not in offered and "" not in offered:
                continue
            if all(_holds(r, {KEY_ZONE: zone}) for r in zone_reqs):
                found.append((instance_type, zone))
    return found
