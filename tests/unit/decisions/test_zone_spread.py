"""Nodes of a plan spread over same-price zones, least-used first, never changing type or cost."""

from __future__ import annotations

from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.zone_spread import spread_across_zones
from gpupool.core.quantity import Quantity


def offering(
    zone: str | None, *, kind: str = "g4dn.xlarge", price: str = "0.526", capacity: str = "OnDemand"
) -> OfferingRef:
    return OfferingRef(
        instance_type=kind,
        zone=zone,
        capacity_type=capacity,  # type: ignore[arg-type]
        tflops=Quantity.parse("65"),
        vram=Quantity.parse("16Gi"),
        gpu_count=1,
        hourly_price=price,
    )


def zones(plan: tuple[OfferingRef, ...]) -> list[str | None]:
    return [o.zone for o in plan]


def test_nodes_alternate_over_same_price_zones() -> None:
    a, b = offering("us-east-1a"), offering("us-east-1b")
    assert zones(spread_across_zones([a, a, a], [a, b], zones_in_use=[])) == [
        "us-east-1a",
        "us-east-1b",
        "us-east-1a",
    ]


def test_zones_already_used_by_the_pool_are_filled_last() -> None:
    a, b, c = offering("us-east-1a"), offering("us-east-1b"), offering("us-east-1c")
    plan = spread_across_zones([a, a], [a, b, c], zones_in_use=["us-east-1a", "us-east-1b"])
    assert zones(plan) == ["us-east-1c", "us-east-1a"]


def test_a_dearer_zone_or_another_capacity_type_is_no_twin() -> None:
    a = offering("us-east-1a")
    dearer_b = offering("us-east-1b", price="0.600")
    spot_c = offering("us-east-1c", capacity="Spot", price="0.526")
    assert zones(spread_across_zones([a, a], [a, dearer_b, spot_c], zones_in_use=[])) == ["us-east-1a"] * 2


def test_types_counts_and_cost_are_unchanged() -> None:
    small_a, small_b = offering("us-east-1a"), offering("us-east-1b")
    big_a = offering("us-east-1a", kind="g6.xlarge", price="0.805")
    chosen = [small_a, small_a, big_a]
    plan = spread_across_zones(chosen, [small_a, small_b, big_a], zones_in_use=[])
    assert sorted(o.instance_type for o in plan) == sorted(o.instance_type for o in chosen)
    assert sum(float(o.hourly_price) for o in plan) == sum(float(o.hourly_price) for o in chosen)


def test_an_offering_without_a_zone_stays_as_it_is() -> None:
    anywhere = offering(None)
    assert spread_across_zones([anywhere], [anywhere], zones_in_use=["us-east-1a"]) == (anywhere,)
