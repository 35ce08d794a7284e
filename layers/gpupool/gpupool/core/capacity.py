"""The capacity gap of a pool: how much TFLOPS and VRAM to add, and how much max still allows.

Role: the arithmetic of DESIGN §3, per dimension (TFLOPS, VRAM), exactly (Quantity values):
    offered  = in-flight claims' tflopsOffered / vramOffered (claims not yet Bound, not Failed)
    gap      = max(0, min − (total + offered), warm − (available + offered))
    headroom = max − (total + offered)            (unbounded when max is not set)
New capacity never takes the pool past max: the gap is clipped to the headroom, and a clip adds
the reason `MaxResourceConstraintReached`. Unlike TensorFusion (which checks warm only once min
is met, and never clips at max), both checks always apply — the larger need wins.

Also `pool_capacity_from_state`: totals from GPUNode statuses and in-flight offers from claims,
for the `plan` command's `--state` objects.

Must not: choose offerings, read the clock, or perform I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import CapacityConfig, ResourceAmount

__all__ = [
    "MAX_RESOURCE_CONSTRAINT_REACHED",
    "CapacityGap",
    "CurrentCapacity",
    "Resources",
    "gap_from_config",
    "plan_capacity_gap",
    "pool_capacity_from_state",
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
class CurrentCapacity:
    """What the pool has (GPUNode totals and availability) and has coming (in-flight offers)."""

    total: Resources = Resources()
    available: Resources = Resources()
    in_flight: Resources = Resources()
    in_flight_claims: int = 0


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
    current: CurrentCapacity,
) -> CapacityGap:
    """The gap per dimension; a max of None leaves that dimension unbounded."""
    total = current.total + current.in_flight
    available = current.available + current.in_flight
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


def gap_from_config(config: CapacityConfig | None, current: CurrentCapacity) -> CapacityGap:
    """plan_capacity_gap for a pool's capacityConfig; an unset max (or max dimension) is unbounded."""
    maximum = config.max_resources if config is not None else None
    return plan_capacity_gap(
        minimum=_amount(config.min_resources if config is not None else None),
        warm=_amount(config.warm_resources if config is not None else None),
        max_tflops=maximum.tflops.value if maximum is not None and maximum.tflops is not None else None,
        max_vram=maximum.vram.value if maximum is not None and maximum.vram is not None else None,
        current=current,
    )


def pool_capacity_from_state(gpu_nodes: Iterable[GPUNode], claims: Iterable[GPUNodeClaim]) -> CurrentCapacity:
    """Totals from GPUNode statuses; in flight = claims neither Bound nor Failed (their offers)."""
    total = available = in_flight = Resources()
    count = 0
    for node in gpu_nodes:
        status = node.status
        if status is None:
            continue
        total += Resources(
            status.total_tflops.value if status.total_tflops is not None else ZERO,
            status.total_vram.value if status.total_vram is not None else ZERO,
        )
        available += Resources(
            status.available_tflops.value if status.available_tflops is not None else ZERO,
            status.available_vram.value if status.available_vram is not None else ZERO,
        )
    for claim in claims:
        phase = claim.status.phase if claim.status is not None else "Pending"
        if phase in ("Bound", "Failed"):
            continue
        in_flight += Resources(claim.spec.tflops_offered.value, claim.spec.vram_offered.value)
        count += 1
    return CurrentCapacity(total=total, available=available, in_flight=in_flight, in_flight_claims=count)
