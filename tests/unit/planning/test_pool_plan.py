"""A pool's plan: gap + gpuRequirements + exact selection over the catalog — zones, exclusions,
the MaxResourceConstraintReached reason, and never passing maxResources in real units."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpupool.core.capacity import (
    MAX_RESOURCE_CONSTRAINT_REACHED,
    CapacityGap,
    CurrentCapacity,
    Resources,
    plan_capacity_gap,
)
from gpupool.core.catalog import load_catalog
from gpupool.core.model.common import Requirement
from gpupool.core.selection_pool import plan_pool_capacity

GI = 2**30
NOTHING = Resources()
AWS = load_catalog("aws")


def gap(
    tflops: int,
    vram_gib: int,
    *,
    max_tflops: int | None = None,
    max_vram_gib: int | None = None,
    total: Resources = NOTHING,
) -> CapacityGap:
    return plan_capacity_gap(
        minimum=Resources(Fraction(tflops), Fraction(vram_gib * GI)),
        warm=Resources(),
        max_tflops=None if max_tflops is None else Fraction(max_tflops),
        max_vram=None if max_vram_gib is None else Fraction(max_vram_gib * GI),
        current=CurrentCapacity(total=total),
    )


def req(key: str, operator: str, *values: str) -> Requirement:
    return Requirement(key=key, operator=operator, values=list(values))  # type: ignore[arg-type]


ON_DEMAND = req("karpenter.sh/capacity-type", "In", "OnDemand")


def test_plan_covers_the_gap_with_priced_nodes() -> None:
    plan = plan_pool_capacity(gap(260, 64), AWS, region="us-east-1", requirements=[ON_DEMAND])
    tflops = sum(n.instance_type.tflops * n.count for n in plan.nodes)
    vram = sum(n.instance_type.vram_gib * n.count for n in plan.nodes)
    assert tflops >= 260 and vram >= 64
    assert all(n.capacity_type == "on-demand" and n.hourly_price > 0 for n in plan.nodes)
    assert plan.hourly_cost == sum(n.hourly_price * n.count for n in plan.nodes)


def test_zone_is_none_when_every_zone_is_allowed_else_first_allowed() -> None:
    free = plan_pool_capacity(gap(65, 16), AWS, region="us-east-1", requirements=[ON_DEMAND])
    assert [n.zone for n in free.nodes] == [None]
    narrowed = plan_pool_capacity(
        gap(65, 16),
        AWS,
        region="us-east-1",
        requirements=[ON_DEMAND, req("topology.kubernetes.io/zone", "In", "us-east-1d", "us-east-1c")],
    )
    assert [n.zone for n in narrowed.nodes] == ["us-east-1c"]


def test_excluded_offerings_are_skipped_for_the_next_cheapest() -> None:
    first = plan_pool_capacity(gap(65, 16), AWS, region="us-east-1", requirements=[ON_DEMAND])
    chosen = first.nodes[0]
    zones = AWS.region("us-east-1").zones  # type: ignore[union-attr]
    excluded = frozenset((chosen.instance_type.name, z, chosen.capacity_type) for z in zones)
    second = plan_pool_capacity(
        gap(65, 16), AWS, region="us-east-1", requirements=[ON_DEMAND], excluded=excluded
    )
    assert second.nodes and second.nodes[0].instance_type.name != chosen.instance_type.name
    assert second.hourly_cost >= first.hourly_cost


def test_regional_prices_apply() -> None:
    tokyo = plan_pool_capacity(gap(65, 16), AWS, region="ap-northeast-1", requirements=[ON_DEMAND])
    virginia = plan_pool_capacity(gap(65, 16), AWS, region="us-east-1", requirements=[ON_DEMAND])
    assert tokyo.hourly_cost > virginia.hourly_cost


@pytest.mark.parametrize(("max_tflops", "max_vram"), [(300, 80), (130, 1000), (1000, 40), (64, 15)])
def test_never_past_max_and_says_so(max_tflops: int, max_vram: int) -> None:
    total = Resources(Fraction(0), Fraction(0))
    plan = plan_pool_capacity(
        gap(2000, 400, max_tflops=max_tflops, max_vram_gib=max_vram, total=total), AWS, region="us-east-1"
    )
    tflops = sum(n.instance_type.tflops * n.count for n in plan.nodes)
    vram = sum(n.instance_type.vram_gib * n.count for n in plan.nodes)
    assert tflops <= max_tflops and vram <= max_vram
    assert any(r.startswith(MAX_RESOURCE_CONSTRAINT_REACHED) for r in plan.reasons)


def test_no_gap_and_no_match_plan_nothing_with_a_reason() -> None:
    assert plan_pool_capacity(gap(0, 0), AWS, region="us-east-1").nodes == ()
    nothing = plan_pool_capacity(
        gap(65, 16), AWS, region="us-east-1", requirements=[req("tensor-fusion.ai/gpu-model", "In", "B200")]
    )
    assert nothing.nodes == () and any("no priced offering" in r for r in nothing.reasons)


def test_unknown_region_is_an_error() -> None:
    with pytest.raises(ValueError, match="not in the aws catalog"):
        plan_pool_capacity(gap(65, 16), AWS, region="mars-1")
