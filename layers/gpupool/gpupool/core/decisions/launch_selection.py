"""The one seam between plan_launch and the capacity math / offering selection.

Role: `capacity_gap` (how much TFLOPS and VRAM the pool still needs, and how much room max
leaves) and `select_offerings` (which offerings to launch for it). plan_launch calls only
these two, so rewiring them to `gpupool.core.capacity` / `gpupool.core.selection` changes
nothing else. Until those modules are wired in, the fallback below follows TensorFusion's
rule (one instance type × N, cheapest total) clipped at max, so launch works end to end.

Must not: read the clock, know about claims' lifecycles, or perform I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from gpupool.core.model.common import Requirement
from gpupool.core.model.constants import KEY_CAPACITY_TYPE, KEY_INSTANCE_TYPE, KEY_REGION, KEY_ZONE
from gpupool.core.model.pool import GPUPool, ResourceAmount
from gpupool.core.plan import OfferingRef
from gpupool.core.quantity import Quantity
from gpupool.core.snapshot import PoolCapacity

__all__ = ["Gap", "Selection", "capacity_gap", "offering_matches", "select_offerings"]

ZERO = Quantity(0)
# Karpenter's capacity-type values ↔ TensorFusion's.
_CAPACITY_TYPE_VALUES = {"on-demand": "OnDemand", "spot": "Spot", "reserved": "Reserved"}


class Gap(BaseModel):
    """What to add (`tflops`, `vram`) and the most that may be added (`room_*`, None = no max)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    tflops: Quantity
    vram: Quantity
    room_tflops: Quantity | None
    room_vram: Quantity | None

    @property
    def empty(self) -> bool:
        return self.tflops <= ZERO and self.vram <= ZERO

    @property
    def max_reached(self) -> bool:
        """No room at all for new capacity in some dimension max limits."""
        return any(room is not None and room <= ZERO for room in (self.room_tflops, self.room_vram))


class Selection(BaseModel):
    model_config = ConfigDict(frozen=True)

    offerings: tuple[OfferingRef, ...]
    covers_gap: bool
    reasons: tuple[str, ...] = ()


def _amount(resource: ResourceAmount | None, field: str) -> Quantity:
    value = getattr(resource, field, None) if resource else None
    return value if isinstance(value, Quantity) else ZERO


def capacity_gap(pool: GPUPool, capacity: PoolCapacity) -> Gap:
    """gap = max(min − (total + in-flight), warm − (available + in-flight)) per dimension;
    the warm check applies only once min is met (TensorFusion's order)."""
    config = pool.spec.capacity_config
    min_r = config.min_resources if config else None
    warm_r = config.warm_resources if config else None
    max_r = config.max_resources if config else None
    gaps: dict[str, Quantity] = {}
    rooms: dict[str, Quantity | None] = {}
    for dim in ("tflops", "vram"):
        total = getattr(capacity, f"total_{dim}") + getattr(capacity, f"in_flight_{dim}")
        available = getattr(capacity, f"available_{dim}") + getattr(capacity, f"in_flight_{dim}")
        need = max(_amount(min_r, dim) - total, ZERO)
        gaps[dim] = need
        max_value = getattr(max_r, dim, None) if max_r else None
        rooms[dim] = max_value - total if isinstance(max_value, Quantity) else None
    if gaps["tflops"] <= ZERO and gaps["vram"] <= ZERO:
        for dim in ("tflops", "vram"):
            available = getattr(capacity, f"available_{dim}") + getattr(capacity, f"in_flight_{dim}")
            gaps[dim] = max(_amount(warm_r, dim) - available, ZERO)
    return Gap(tflops=gaps["tflops"], vram=gaps["vram"], room_tflops=rooms["tflops"], room_vram=rooms["vram"])


def _value_of(offering: OfferingRef, key: str) -> str | None:
    if key == KEY_INSTANCE_TYPE:
        return offering.instance_type
    if key == KEY_ZONE:
        return offering.zone
    if key == KEY_REGION:
        return offering.region
    if key == KEY_CAPACITY_TYPE:
        return offering.capacity_type
    return None


def offering_matches(offering: OfferingRef, requirements: Sequence[Requirement]) -> bool:
    """Instance type, zone, region and capacity type requirements (In/NotIn/Exists/DoesNotExist);
    other keys are left to the full requirements module."""
    for req in requirements:
        if req.key not in (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_REGION, KEY_CAPACITY_TYPE):
            continue
        value = _value_of(offering, req.key)
        values = {_CAPACITY_TYPE_VALUES.get(v, v) for v in req.values}
        if req.operator == "In" and value not in values:
            return False
        if req.operator == "NotIn" and value in values:
            return False
        if req.operator == "Exists" and value is None:
            return False
        if req.operator == "DoesNotExist" and value is not None:
            return False
    return True


def _ceil_div(need: Quantity, per_node: Quantity) -> int:
    if need <= ZERO:
        return 0
    if per_node <= ZERO:
        return 10**9
    ratio: Fraction = need.value / per_node.value
    return -((-ratio.numerator) // ratio.denominator)


def _fits(offering: OfferingRef, count: int, gap: Gap) -> int:
    """How many of `count` nodes fit under max."""
    for room, per_node in ((gap.room_tflops, offering.tflops), (gap.room_vram, offering.vram)):
        if room is None or per_node <= ZERO:
            continue
        count = min(count, int(room.value // per_node.value) if room > ZERO else 0)
    return count


def select_offerings(gap: Gap, candidates: Sequence[OfferingRef], *, max_nodes: int) -> Selection:
    """Offerings whose sum covers the gap at the least hourly cost without passing max."""
    best: tuple[Decimal, int, str, OfferingRef, int] | None = None
    partial: tuple[Decimal, int, str, OfferingRef, int] | None = None
    for offering in candidates:
        wanted = max(_ceil_div(gap.tflops, offering.tflops), _ceil_div(gap.vram, offering.vram))
        if wanted <= 0:
            continue
        allowed = min(_fits(offering, wanted, gap), max_nodes)
        if allowed <= 0:
            continue
        row = (Decimal(offering.hourly_price) * allowed, allowed, offering.key, offering, allowed)
        if allowed == wanted:
            best = row if best is None or row[:3] < best[:3] else best
        else:
            more = partial is None or (allowed, -row[0]) > (partial[1], -partial[0])
            partial = row if more else partial
    if best is not None:
        return Selection(offerings=(best[3],) * best[4], covers_gap=True)
    if partial is not None:
        return Selection(
            offerings=(partial[3],) * partial[4],
            covers_gap=False,
            reasons=(f"MaxResourceConstraintReached: only {partial[4]} node(s) fit under maxResources",),
        )
    return Selection(offerings=(), covers_gap=False)
