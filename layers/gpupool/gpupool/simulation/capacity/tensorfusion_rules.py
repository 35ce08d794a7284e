"""TensorFusion's capacity rules, replayed for `gpupool simulate capacity` (its side of the comparison).

Role: the expansion and compaction rules TensorFusion (v2.17.x) applies to a Provisioned pool, as
`shared/TENSORFUSION-FACTS.md` records them, written here on their own small types so that the
comparison measures the rules and not shared code:
- gap: `min − (total + in-flight)`; the warm check only once min is met and the pool is Running:
  `warm − (available + in-flight)`; the larger need per resource wins. No clipping at max: it
  refuses only when the current total already reaches max.
- choice: one instance type × N — for each type, N = the nodes of that type covering the gap;
  the cheapest total wins, with spot priced as on-demand and an unknown price as $0; at most 100
  nodes per loop; the zone drawn at random (the caller's seeded `random.Random`) from the type's
  zones; region ignored.
- compaction: a node that is Running, has no workers, is older than 5 minutes and is not
  do-not-disrupt goes when `available − node ≥ warm` and `total − node ≥ min` (subtracting as it
  goes); nothing while a claim is pending. No launch or registration timeouts: an in-flight node
  that never joins stays in flight (the simulation keeps it so).

Must not: import gpupool's planning or decisions (the replay must not share them), tune any rule
to lose, touch Kubernetes or the cloud.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

__all__ = [
    "Resources",
    "TFChoice",
    "TFNode",
    "TFOffering",
    "tf_choose",
    "tf_compaction",
    "tf_gap",
]

MAX_NODES_PER_LOOP = 100
COMPACTION_MIN_AGE = timedelta(minutes=5)


@dataclass(frozen=True)
class Resources:
    """TFLOPS and VRAM (GiB)."""

    tflops: Decimal = Decimal(0)
    vram: Decimal = Decimal(0)

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.tflops + other.tflops, self.vram + other.vram)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.tflops - other.tflops, self.vram - other.vram)

    def covers(self, other: Resources) -> bool:
        return self.tflops >= other.tflops and self.vram >= other.vram

    @property
    def positive(self) -> bool:
        return self.tflops > 0 or self.vram > 0


@dataclass(frozen=True)
class TFOffering:
    """One instance type in one zone and capacity type; `on_demand_price` None when unknown."""

    instance_type: str
    zone: str
    capacity_type: str
    size: Resources
    on_demand_price: Decimal | None


@dataclass(frozen=True)
class TFChoice:
    """What one expansion loop launches: `count` × `offering`, and the cost TensorFusion saw."""

    offering: TFOffering
    count: int
    seen_cost: Decimal


@dataclass(frozen=True)
class TFNode:
    """A node as compaction sees it."""

    name: str
    size: Resources
    created: datetime
    running: bool
    workers: int
    do_not_disrupt: bool = False


def tf_gap(
    *,
    min_: Resources,
    warm: Resources,
    total: Resources,
    available: Resources,
    in_flight: Resources,
    running: bool,
) -> Resources:
    """What TensorFusion launches for: the min check, then (min met, pool Running) the warm check."""
    min_need = min_ - (total + in_flight)
    need = Resources(max(min_need.tflops, Decimal(0)), max(min_need.vram, Decimal(0)))
    if not need.positive and running:
        warm_need = warm - (available + in_flight)
        need = Resources(max(warm_need.tflops, Decimal(0)), max(warm_need.vram, Decimal(0)))
    return need


def _nodes_needed(need: Resources, size: Resources) -> int | None:
    counts = []
    for wanted, each in ((need.tflops, size.tflops), (need.vram, size.vram)):
        if wanted <= 0:
            continue
        if each <= 0:
            return None
        counts.append(math.ceil(wanted / each))
    return max(counts, default=0)


def tf_choose(
    need: Resources,
    offerings: Sequence[TFOffering],
    *,
    total: Resources,
    max_: Resources | None,
    rng: random.Random,
) -> TFChoice | None:
    """One instance type × N for `need` (None: nothing needed, max reached, or no type fits)."""
    if not need.positive:
        return None
    if max_ is not None and total.covers(max_):
        return None  # refuses only when the current total already reaches max
    by_type: dict[str, list[TFOffering]] = {}
    for offering in offerings:
        by_type.setdefault(offering.instance_type, []).append(offering)
    best: tuple[Decimal, str, int] | None = None
    for instance_type in sorted(by_type):
        first = by_type[instance_type][0]
        count = _nodes_needed(need, first.size)
        if count is None or count == 0 or count > MAX_NODES_PER_LOOP:
            continue
        # spot priced as on-demand; unknown prices as $0
        price = next(
            (o.on_demand_price for o in by_type[instance_type] if o.on_demand_price is not None), None
        )
        cost = (price or Decimal(0)) * count
        if best is None or (cost, instance_type) < (best[0], best[1]):
            best = (cost, instance_type, count)
    if best is None:
        return None
    cost, instance_type, count = best
    zones = sorted({o.zone for o in by_type[instance_type]})
    zone = rng.choice(zones)
    offering = next(o for o in by_type[instance_type] if o.zone == zone)
    return TFChoice(offering=offering, count=count, seen_cost=cost)


def tf_compaction(
    nodes: Sequence[TFNode],
    *,
    min_: Resources,
    warm: Resources,
    total: Resources,
    available: Resources,
    pending_claims: int,
    now: datetime,
) -> list[str]:
    """The nodes TensorFusion's compaction removes this period, by name."""
    if pending_claims:
        return []
    removed = []
    for node in sorted(nodes, key=lambda n: n.name):
        if not node.running or node.workers or node.do_not_disrupt:
            continue
        if now - node.created <= COMPACTION_MIN_AGE:
            continue
        if not (available - node.size).covers(warm) or not (total - node.size).covers(min_):
            continue
        removed.append(node.name)
        available -= node.size
        total -= node.size
    return removed
