"""What the simulated Karpenter reads in requirements: which offerings they allow, in which order.

Role: `compatible(requirements, offerings)` — the priced offerings (instance type × zone ×
capacity type) Karpenter requirements allow, read by the one requirement algebra
(`core.model.requirements`): In, NotIn, Exists, DoesNotExist on the instance type, zone, region,
capacity type (Karpenter's spelling: on-demand / spot / reserved; none named means on-demand, as
Karpenter's default NodePool requirement) and every label the catalog knows
(`planning.requirements.offering_labels`); Gt, Lt, Gte, Lte on its integer labels; minValues
(none when the allowed offerings carry fewer distinct values of a key); a key the catalog cannot
judge (a custom label the node will carry) is left to the node — in the order
Karpenter's AWS provider tries them at launch: reserved, then spot, then on-demand, each
cheapest first. `nodepool_requirements(nodepool, offerings, zone=None)` — the requirements of the
NodeClaim Karpenter's provisioner makes from a NodePool
(`pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go`): every compatible instance
type, ordered by price, at most `MAX_INSTANCE_TYPES` (600, `MaxInstanceTypes`); the capacity
types allowed; a zone only when the NodePool names zones or one is asked for; the NodePool's
other requirements; and `karpenter.sh/nodepool In [<name>]`.
Simpler than Karpenter: prices are the catalog's, not live Spot prices or capacity-optimized
choices; pods' own requirements are not merged in (AutoSelect narrows its own NodeClaims).

Must not: write anything, or know the NodeClaim lifecycle (`karpenter` plays it).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Final

from gpupool.core.model.constants import KEY_CAPACITY_TYPE, KEY_INSTANCE_TYPE, KEY_REGION, KEY_ZONE
from gpupool.core.model.karpenter import KarpenterNodePool, KarpenterRequirement
from gpupool.core.model.requirements import all_hold, min_values_shortfall
from gpupool.core.planning.plan import OfferingRef

__all__ = [
    "CAPACITY_TYPES",
    "LABEL_NODEPOOL",
    "MAX_INSTANCE_TYPES",
    "compatible",
    "labels_of",
    "nodepool_requirements",
]

MAX_INSTANCE_TYPES: Final = 600
LABEL_NODEPOOL: Final = "karpenter.sh/nodepool"
# gpupool's OfferingRef capacity types as Karpenter spells them, in the order Karpenter tries them.
CAPACITY_TYPES: Final = {"Reserved": "reserved", "Spot": "spot", "OnDemand": "on-demand"}
_PREFERENCE = {name: rank for rank, name in enumerate(CAPACITY_TYPES.values())}


def labels_of(offering: OfferingRef) -> dict[str, str]:
    """The node labels an instance of `offering` carries (capacity type in Karpenter's spelling)."""
    labels = {**offering.labels, KEY_INSTANCE_TYPE: offering.instance_type}
    labels[KEY_CAPACITY_TYPE] = CAPACITY_TYPES[offering.capacity_type]
    if offering.zone:
        labels[KEY_ZONE] = offering.zone
    if offering.region:
        labels[KEY_REGION] = offering.region
    return labels


def compatible(
    requirements: Sequence[KarpenterRequirement], offerings: Sequence[OfferingRef]
) -> list[OfferingRef]:
    """The offerings `requirements` allow, in the order Karpenter tries them (module docstring)."""
    if not any(r.key == KEY_CAPACITY_TYPE for r in requirements):
        requirements = [
            *requirements,
            KarpenterRequirement(key=KEY_CAPACITY_TYPE, operator="In", values=["on-demand"]),
        ]
    allowed = []
    for offering in offerings:
        labels = labels_of(offering)
        if all_hold(requirements, labels, judged=labels.keys()):  # a key it lacks: the node's own
            allowed.append(offering)
    if min_values_shortfall(requirements, (labels_of(o) for o in allowed)):
        return []  # Karpenter launches nothing that leaves a minValues short
    return sorted(
        allowed,
        key=lambda o: (_PREFERENCE[CAPACITY_TYPES[o.capacity_type]], Decimal(o.hourly_price), o.key),
    )


def nodepool_requirements(
    nodepool: KarpenterNodePool, offerings: Sequence[OfferingRef], *, zone: str | None = None
) -> list[KarpenterRequirement]:
    """The requirements of a NodeClaim Karpenter makes from `nodepool` (module docstring)."""
    own = [r for r in nodepool.spec.template.spec.requirements if r.key != LABEL_NODEPOOL]
    if zone is not None:
        own = [r for r in own if r.key != KEY_ZONE] + [
            KarpenterRequirement(key=KEY_ZONE, operator="In", values=[zone])
        ]
    fits = compatible(own, offerings)
    by_price: dict[str, Decimal] = {}
    for offering in fits:
        price = Decimal(offering.hourly_price)
        by_price[offering.instance_type] = min(price, by_price.get(offering.instance_type, price))
    types = sorted(by_price, key=lambda name: (by_price[name], name))[:MAX_INSTANCE_TYPES]
    capacity_types = [
        c for c in CAPACITY_TYPES.values() if any(CAPACITY_TYPES[o.capacity_type] == c for o in fits)
    ]
    named_zone = any(r.key == KEY_ZONE for r in own)
    kept = [
        r
        for r in own
        if r.key not in (KEY_INSTANCE_TYPE, KEY_CAPACITY_TYPE) and (named_zone or r.key != KEY_ZONE)
    ]
    return [
        KarpenterRequirement(key=LABEL_NODEPOOL, operator="In", values=[nodepool.name]),
        KarpenterRequirement(key=KEY_INSTANCE_TYPE, operator="In", values=types),
        KarpenterRequirement(key=KEY_CAPACITY_TYPE, operator="In", values=capacity_types or ["on-demand"]),
        *kept,
    ]
