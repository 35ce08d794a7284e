"""Capacity gap: min and warm checks counting in-flight offers, clipping at maxResources with the
MaxResourceConstraintReached reason, over `PoolCapacity` (the snapshot's one accounting)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest

from gpupool.core.model.pool import CapacityConfig
from gpupool.core.planning.gap import (
    MAX_RESOURCE_CONSTRAINT_REACHED,
    Resources,
    gap_from_config,
    plan_capacity_gap,
)
from gpupool.core.planning.snapshot import PoolCapacity
from gpupool.core.quantity import Quantity

GI = 2**30
ZERO = Resources()


def r(tflops: float, vram_gib: float) -> Resources:
    return Resources(Fraction(str(tflops)), Fraction(str(vram_gib)) * GI)


@dataclass(frozen=True)
class Now:
    """What a pool has and has coming, as the table reads it."""

    total: Resources
    available: Resources
    in_flight: Resources

    def capacity(self) -> PoolCapacity:
        return PoolCapacity(
            total_tflops=Quantity(self.total.tflops),
            total_vram=Quantity(self.total.vram),
            available_tflops=Quantity(self.available.tflops),
            available_vram=Quantity(self.available.vram),
            in_flight_tflops=Quantity(self.in_flight.tflops),
            in_flight_vram=Quantity(self.in_flight.vram),
        )


def current(total: Resources = ZERO, available: Resources = ZERO, in_flight: Resources = ZERO) -> Now:
    return Now(total=total, available=available, in_flight=in_flight)


# (min, warm, max or None, total, available, in flight) → (need, clipped?)
CASES: list[tuple[str, Resources, Resources, Resources | None, Now, Resources, bool]] = [
    ("empty pool needs min", r(65, 16), r(0, 0), None, current(), r(65, 16), False),
    ("min met, nothing warm", r(65, 16), r(0, 0), None, current(r(65, 16), r(10, 2)), r(0, 0), False),
    ("warm reserve short", r(65, 16), r(60, 8), None, current(r(130, 32), r(20, 4)), r(40, 4), False),
    (
        "larger of min and warm per dimension",
        r(200, 16),
        r(100, 64),
        None,
        current(r(150, 32), r(50, 10)),
        r(50, 54),
        False,
    ),
    (
        "in-flight offers count for min",
        r(130, 32),
        r(0, 0),
        None,
        current(r(65, 16), in_flight=r(65, 16)),
        r(0, 0),
        False,
    ),
    (
        "in-flight offers count for warm",
        r(0, 0),
        r(100, 20),
        None,
        current(r(65, 16), r(30, 5), r(65, 16)),
        r(5, 0),
        False,
    ),
    (
        "over min is no negative gap",
        r(65, 16),
        r(0, 0),
        None,
        current(r(500, 100), r(500, 100)),
        r(0, 0),
        False,
    ),
    ("max leaves room", r(130, 32), r(0, 0), r(500, 128), current(r(65, 16)), r(65, 16), False),
    ("max clips", r(1000, 32), r(0, 0), r(300, 128), current(r(200, 16)), r(100, 16), True),
    (
        "max already reached",
        r(1000, 64),
        r(0, 0),
        r(300, 64),
        current(r(300, 64), in_flight=r(0, 0)),
        r(0, 0),
        True,
    ),
    (
        "in flight counts against max",
        r(400, 64),
        r(0, 0),
        r(300, 100),
        current(r(100, 16), in_flight=r(150, 20)),
        r(50, 28),
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "minimum", "warm", "maximum", "now", "need", "clipped"), CASES, ids=[c[0] for c in CASES]
)
def test_gap_table(
    name: str,
    minimum: Resources,
    warm: Resources,
    maximum: Resources | None,
    now: Now,
    need: Resources,
    clipped: bool,
) -> None:
    gap = plan_capacity_gap(
        minimum=minimum,
        warm=warm,
        max_tflops=None if maximum is None else maximum.tflops,
        max_vram=None if maximum is None else maximum.vram,
        current=now.capacity(),
    )
    assert gap.need == need
    assert any(reason.startswith(MAX_RESOURCE_CONSTRAINT_REACHED) for reason in gap.reasons) is clipped
    if maximum is not None:
        after = now.total + now.in_flight + gap.need
        assert after.tflops <= max(maximum.tflops, (now.total + now.in_flight).tflops)
        assert after.vram <= max(maximum.vram, (now.total + now.in_flight).vram)
        assert gap.headroom_tflops == max(Fraction(0), maximum.tflops - (now.total + now.in_flight).tflops)


def test_clip_names_each_dimension_it_cut() -> None:
    gap = plan_capacity_gap(
        minimum=r(1000, 10),
        warm=r(0, 0),
        max_tflops=Fraction(100),
        max_vram=None,
        current=current().capacity(),
    )
    assert gap.need == r(100, 10) and gap.headroom_vram is None
    assert len(gap.reasons) == 1 and "TFLOPS" in gap.reasons[0]


def _config(raw: dict[str, Any]) -> CapacityConfig:
    return CapacityConfig.model_validate(raw)


def test_gap_from_config_reads_quantities_and_treats_unset_max_as_unbounded() -> None:
    config = _config({"minResources": {"tflops": "1.5e3", "vram": "64Gi"}, "maxResources": {"tflops": "1k"}})
    gap = gap_from_config(config, current().capacity())
    assert gap.need == Resources(Fraction(1000), Fraction(64 * GI))
    assert gap.headroom_tflops == 1000 and gap.headroom_vram is None
    assert gap_from_config(None, current().capacity()).empty
