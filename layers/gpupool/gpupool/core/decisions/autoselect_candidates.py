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
catalog knows. Every pair must satisfy the NodePool's requirements (the one requirement algebra,
`core.model.requirements`: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte on the instance
type, zone and the catalog's labels of the type; keys the catalog cannot judge are left to
Karpenter) and the pod's nodeSelector / required node affinity on instance type and zone (its
terms ORed; other keys left to the scheduler); a type the catalog prices is only paired with the
zones it is offered in.
`capacity_type_of(placement)` is the launched capacity type in gpupool's spelling (OnDemand /
Spot / Reserved), for the unavailable-offerings memory.

Must not: perform I/O, read the clock, or decide which candidate is tried (`decisions.autoselect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Final

from gpupool.core.decisions.karpenter_nodeclaim import placement_of
from gpupool.core.model.constants import KEY_CAPACITY_TYPE, KEY_INSTANCE_TYPE, KEY_REGION, KEY_ZONE
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool, KarpenterRequirement
from gpupool.core.model.requirements import all_hold, pod_node_terms, terms_allow
from gpupool.core.planning.plan import OfferingRef

__all__ = ["Candidate", "candidates", "capacity_type_of", "launched_placement"]

Candidate = tuple[str, str]  # (instance type, zone)
# The labels a candidate fixes: requirements on them are judged even when a label set lacks them;
# other keys a label set lacks are left to Karpenter (and the scheduler, for the pod's).
_PLACED: Final = frozenset({KEY_INSTANCE_TYPE, KEY_ZONE})
_KARPENTER_CAPACITY: Final = {"on-demand": "OnDemand", "spot": "Spot", "reserved": "Reserved"}


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
    pod_terms = pod_node_terms(pod.spec.node_selector, pod.spec.affinity)
    type_reqs = [r for r in pool_reqs if r.key not in (KEY_ZONE, KEY_CAPACITY_TYPE, KEY_REGION)]
    zone_reqs = [r for r in pool_reqs if r.key == KEY_ZONE]
    found: list[Candidate] = []
    for instance_type in types:
        labels = labels_of.get(instance_type, {KEY_INSTANCE_TYPE: instance_type})
        if not all_hold(type_reqs, labels, judged={*labels, *_PLACED}):
            continue
        offered = zones_of.get(instance_type)
        for zone in zones:
            if offered is not None and zone not in offered and "" not in offered:
                continue
            placed = {KEY_INSTANCE_TYPE: instance_type, KEY_ZONE: zone}
            if all_hold(zone_reqs, placed, judged=_PLACED) and terms_allow(pod_terms, placed, judged=_PLACED):
                found.append((instance_type, zone))
    return found
