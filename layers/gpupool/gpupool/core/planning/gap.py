"""The capacity gap of a pool: how much TFLOPS and VRAM to add, and how much max still allows.

Role: the arithmetic of DESIGN §3, per dimension (TFLOPS, VRAM), exactly (Quantity values):
    offered  = tflopsOffered / vramOffered of counted claims whose node reports no GPU capacity yet
    gap      = max(0, min − (total + offered), warm − (available + offered))
    headroom = max − (total + offered)            (unbounded when max is not set)
New capacity never takes the pool past max: the gap is clipped to the headroom, and a clip adds
the reason `MaxResourceConstraintReached`. Unlike TensorFusion (which checks warm only once min
is met, and never clips at max), both checks always apply — the larger need wins.

What counts as total and in flight is `snapshot.pool_capacity`'s one accounting (a claim whose
node already reports GPU capacity is counted once, by its GPUNode); `CapacityGap` is the one gap
type every caller (launch, `gpupool plan`, the benchmark) reads.

Must not: choose offerings, read the clock, or perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gpupool.core.model.pool import CapacityConfig, GPUPool, ResourceAmount
from gpupool.core.planning.snapshot import PoolCapacity
from gpupool.core.quantity import Quantity

__all__ = [
    "MAX_RESOURCE_CONSTRAINT_REACHED",
    "CapacityGap",
    "Resources",
    "capacity_gap",
    "gap_from_config",
    "plan_capacity_gap",
]

MAX_RESOURCE_CONSTRAINT_REACHED = "MaxResourceConstraintReached"
ZERO = Fraction(0)


@dataclass(frozen=True, slots=True)
class Resources:
    """TFLOPS and VRAM (bytes), exact."""

    tflops: Fraction = ZERO
    vram: Fraction = ZERO

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.tflops + other.tflops, self.vram + other.vram)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.tflops - other.tflops, self.vram - other.vram)

    def clipped_at_zero(self) -> Resources:
        return Resources(max(self.tflops, ZERO), max(self.vram, ZERO))


@dataclass(frozen=True, slots=True)
class CapacityGap:
    """What to add (`need`, already clipped) and what max allows (`headroom`, None = unbounded)."""

    need: Resources
    headroom_tflops: Fraction | None
    headroom_vram: Fraction | None
    reasons: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.need.tflops <= 0 and self.need.vram <= 0

    @property
    def clipped(self) -> bool:
        """maxResources cut the need (the reasons say which dimension)."""
        return any(r.startswith(MAX_RESOURCE_CONSTRAINT_REACHED) for r in self.reasons)

    @property
    def max_reached(self) -> bool:
        """No room at all for new capacity in some dimension max limits."""
        return any(room is not None and room <= 0 for room in (self.headroom_tflops, self.headroom_vram))

    @property
    def tflops(self) -> Quantity:
        return Quantity(self.need.tflops)

    @property
    def vram(self) -> Quantity:
        return Quantity.from_number(self.need.vram, binary=True)

    def describe(self) -> str:
        return f"gap {self.tflops} TFLOPS / {self.vram} VRAM"


def _dimension(
    minimum: Fraction, warm: Fraction, maximum: Fraction | None, *, total: Fraction, available: Fraction
) -> tuple[Fraction, Fraction | None, bool]:
    wanted = max(ZERO, minimum - total, warm - available)
    if maximum is None:
        return wanted, None, False
    headroom = max(ZERO, maximum - total)
    return min(wanted, headroom), headroom, wanted > headroom


def plan_capacity_gap(
    *,
    minimum: Resources,
    warm: Resources,
    max_tflops: Fraction | None,
    max_vram: Fraction | None,
    current: PoolCapacity,
) -> CapacityGap:
    """The gap per dimension; a max of None leaves that dimension unbounded."""
    in_flight = Resources(current.in_flight_tflops.value, current.in_flight_vram.value)
    total = Resources(current.total_tflops.value, current.total_vram.value) + in_flight
    available = Resources(current.available_tflops.value, current.available_vram.value) + in_flight
    need_t, room_t, clip_t = _dimension(
        minimum.tflops, warm.tflops, max_tflops, total=total.tflops, available=available.tflops
    )
    need_v, room_v, clip_v = _dimension(
        minimum.vram, warm.vram, max_vram, total=total.vram, available=available.vram
    )
    reasons = tuple(
        f"{MAX_RESOURCE_CONSTRAINT_REACHED}: the {name} gap is cut to what maxResources allows"
        for clipped, name in ((clip_t, "TFLOPS"), (clip_v, "VRAM"))
        if clipped
    )
    return CapacityGap(Resources(need_t, need_v), room_t, room_v, reasons)


def _amount(resource: ResourceAmount | None) -> Resources:
    if resource is None:
        return Resources()
    return Resources(
        resource.tflops.value if resource.tflops is not None else ZERO,
        resource.vram.value if resource.vram is not None else ZERO,
    )


def gap_from_config(config: CapacityConfig | None, current: PoolCapacity) -> CapacityGap:
    """plan_capacity_gap for a pool's capacityConfig; an unset max (or max dimension) is unbounded."""
    maximum = config.max_resources if config is not None else None
    return plan_capacity_gap(
        minimum=_amount(config.min_resources if config is not None else None),
        warm=_amount(config.warm_resources if config is not None else None),
        max_tflops=maximum.tflops.value if maximum is not None and maximum.tflops is not None else None,
        max_vram=maximum.vram.value if maximum is not None and maximum.vram is not None else None,
        current=current,
    )


def capacity_gap(pool: GPUPool, capacity: PoolCapacity) -> CapacityGap:
    """The pool's gap: its capacityConfig against what `snapshot.pool_capacity` counts."""
    return gap_from_config(pool.spec.capacity_config, capacity)
