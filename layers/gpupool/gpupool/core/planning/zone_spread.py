"""Spread a plan's nodes over the zones that offer the same node at the same price.

Role: the cheapest mix names one offering per (instance type, capacity type), and when several
zones sell it at the same price the tie goes to the first zone by name — so every node of a
pool would land in one zone, and one zone's outage or Spot reclaim would take them all. Without
changing what the plan costs, each node goes instead to the least-used zone (counting the pool's
live claims) among those twins. Only offerings that passed gpuRequirements and the node class's
launchable zones are twins, so a zone requirement still rules.

Must not: change instance types, capacity types, counts or cost; read the clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from gpupool.core.planning.plan import OfferingRef

__all__ = ["spread_across_zones"]


def _twin_key(offering: OfferingRef) -> tuple[str, str, str | None, str]:
    return (offering.instance_type, offering.capacity_type, offering.region, offering.hourly_price)


def spread_across_zones(
    chosen: Sequence[OfferingRef], candidates: Iterable[OfferingRef], *, zones_in_use: Iterable[str]
) -> tuple[OfferingRef, ...]:
    """`chosen`, each node moved to the least-used zone (ties by name) of its same-price twins."""
    twins: dict[tuple[str, str, str | None, str], list[OfferingRef]] = {}
    for offering in candidates:
        if offering.zone is not None:
            twins.setdefault(_twin_key(offering), []).append(offering)
    used = Counter(zones_in_use)
    spread = []
    for offering in chosen:
        group = twins.get(_twin_key(offering)) or [offering]
        pick = min(group, key=lambda o: (used[o.zone or ""], o.zone or ""))
        used[pick.zone or ""] += 1
        spread.append(pick)
    return tuple(spread)
