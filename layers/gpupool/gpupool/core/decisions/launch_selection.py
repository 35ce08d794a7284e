"""The one seam between plan_launch and the capacity math / offering selection.

Role: `capacity_gap` (how much TFLOPS and VRAM the pool still needs, and how much room max
leaves, counting in-flight claims — the math is `gpupool.core.capacity`'s) and
`select_offerings` (which offerings to launch for it: the exact cheapest mix from
`gpupool.core.selection`, in integer milli-TFLOPS, MiB and micro-dollars — sizes rounded down,
needs rounded up, so a chosen mix always covers the gap).
plan_launch calls only these two.

Must not: read the clock, know about claims' lifecycles, or perform I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from gpupool.core.capacity import (
    MAX_RESOURCE_CONSTRAINT_REACHED,
    CapacityGap,
    CurrentCapacity,
    Resources,
    gap_from_config,
)
from gpupool.core.model.common import Requirement
from gpupool.core.model.constants import KEY_CAPACITY_TYPE, KEY_INSTANCE_TYPE, KEY_REGION, KEY_ZONE
from gpupool.core.model.pool import GPUPool
from gpupool.core.plan import OfferingRef
from gpupool.core.quantity import Quantity
from gpupool.core.requirements import labels_match, normalize_capacity_type
from gpupool.core.selection import Candidate, select_cheapest
from gpupool.core.selection_pool import solver_units
from gpupool.core.snapshot import PoolCapacity

__all__ = ["Gap", "Selection", "capacity_gap", "offering_matches", "select_offerings"]

ZERO = Quantity(0)


class Gap(BaseModel):
    """What to add (`tflops`, `vram`, already clipped at max) and the most that may be added
    (`room_*`, None = no max); `clipped` when max cut the need (MaxResourceConstraintReached)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    tflops: Quantity
    vram: Quantity
    room_tflops: Quantity | None
    room_vram: Quantity | None
    clipped: bool = False
    reasons: tuple[str, ...] = ()
    solver: CapacityGap

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


def _resources(tflops: Quantity, vram: Quantity) -> Resources:
    return Resources(tflops.value, vram.value)


def capacity_gap(pool: GPUPool, capacity: PoolCapacity) -> Gap:
    """The pool's gap from `gpupool.core.capacity` (min, warm and max against current plus
    in-flight capacity), with gpupool's accounting of what counts (see `pool_capacity`)."""
    current = CurrentCapacity(
        total=_resources(capacity.total_tflops, capacity.total_vram),
        available=_resources(capacity.available_tflops, capacity.available_vram),
        in_flight=_resources(capacity.in_flight_tflops, capacity.in_flight_vram),
        in_flight_claims=capacity.in_flight_claims,
    )
    gap = gap_from_config(pool.spec.capacity_config, current)
    return Gap(
        tflops=Quantity(gap.need.tflops),
        vram=Quantity.from_number(gap.need.vram, binary=True),
        room_tflops=None if gap.headroom_tflops is None else Quantity(gap.headroom_tflops),
        room_vram=None if gap.headroom_vram is None else Quantity.from_number(gap.headroom_vram, binary=True),
        clipped=any(r.startswith(MAX_RESOURCE_CONSTRAINT_REACHED) for r in gap.reasons),
        reasons=gap.reasons,
        solver=gap,
    )


_BASIC_KEYS = (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_REGION, KEY_CAPACITY_TYPE)


def offering_matches(offering: OfferingRef, requirements: Sequence[Requirement]) -> bool:
    """Whether the pool's gpuRequirements allow `offering` (`gpupool.core.requirements` semantics).

    With the offering's labels every catalog key is judged; without them only instance type,
    zone, region and capacity type are. Raises RequirementError on a malformed requirement."""
    labels = {KEY_INSTANCE_TYPE: offering.instance_type, KEY_CAPACITY_TYPE: offering.capacity_type}
    if offering.zone:
        labels[KEY_ZONE] = offering.zone
    if offering.region:
        labels[KEY_REGION] = offering.region
    labels[KEY_CAPACITY_TYPE] = normalize_capacity_type(labels[KEY_CAPACITY_TYPE])
    labels.update(offering.labels)
    judged = list(requirements)
    if not offering.labels:
        judged = [r for r in judged if r.key in _BASIC_KEYS and r.key in labels]
    return labels_match(labels, judged)


_MILLI = Fraction(1000)  # TFLOPS → integer milli-TFLOPS
_MIB = Fraction(1, 2**20)  # bytes → integer MiB
_MICRO_USD = Decimal(10**6)


def _units(value: Quantity, scale: Fraction) -> int:
    """An offering's size in solver units, rounded down (so a chosen mix never falls short)."""
    scaled = value.value * scale
    return scaled.numerator // scaled.denominator


def select_offerings(gap: Gap, candidates: Sequence[OfferingRef], *, max_nodes: int) -> Selection:
    """The cheapest mix of offerings covering the gap without passing max (exact: see
    `gpupool.core.selection.select_cheapest`); when max forbids a full cover, what max allows."""
    by_name: dict[str, OfferingRef] = {}
    solver_input: list[Candidate] = []
    for offering in candidates:
        tflops = _units(offering.tflops, _MILLI)
        vram = _units(offering.vram, _MIB)
        price = int(Decimal(offering.hourly_price) * _MICRO_USD)
        if offering.key in by_name or tflops <= 0 or vram <= 0 or price <= 0:
            continue
        by_name[offering.key] = offering
        solver_input.append(Candidate(name=offering.key, tflops=tflops, vram=vram, price=price))
    units = solver_units(gap.solver)
    result = select_cheapest(
        solver_input,
        need_tflops=units["need_tflops"] or 0,
        need_vram=units["need_vram"] or 0,
        cap_tflops=units["cap_tflops"],
        cap_vram=units["cap_vram"],
        max_nodes=max_nodes,
    )
    chosen = tuple(by_name[c.name] for c, count in result.counts for _ in range(count))
    if not chosen:
        return Selection(offerings=(), covers_gap=False)
    reasons: tuple[str, ...] = ()
    if not result.covers_need:
        reasons = (f"MaxResourceConstraintReached: only {len(chosen)} node(s) fit under maxResources",)
    return Selection(offerings=chosen, covers_gap=result.covers_need, reasons=reasons)
