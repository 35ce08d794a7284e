"""The one capacity pipeline (`plan_capacity`) over the bundled catalog: covering the gap with
priced nodes, zone requirements, offerings remembered as out of capacity, regional prices, never
passing maxResources (with the MaxResourceConstraintReached reason), and the double-count case."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from gpupool.core.planning.capacity_plan import CapacityPlan, plan_capacity
from gpupool.core.planning.gap import MAX_RESOURCE_CONSTRAINT_REACHED
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.planning.unavailable import ANNOTATION_UNAVAILABLE_OFFERINGS
from tests.unit.decisions.builders import NOW, claim, gpu_node, node, pool, snapshot

ON_DEMAND = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["OnDemand"]}
VIRGINIA = catalog_offerings("aws", "us-east-1")


def plan(
    min_: tuple[str, str] = ("65", "16Gi"),
    *,
    max_: tuple[str, str] | None = None,
    requirements: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    region: str = "us-east-1",
    **parts: Any,
) -> CapacityPlan:
    the_pool = pool(
        min_=min_,
        max_=max_,
        requirements=[ON_DEMAND] if requirements is None else requirements,
        annotations=annotations,
    )
    return plan_capacity(snapshot(the_pool, **parts), catalog_offerings("aws", region), now=NOW)


def added(result: CapacityPlan) -> tuple[Fraction, Fraction]:
    return (
        sum((o.tflops.value for o in result.offerings), Fraction(0)),
        sum((o.vram.value for o in result.offerings), Fraction(0)),
    )


def test_plan_covers_the_gap_with_priced_nodes() -> None:
    result = plan(("260", "64Gi"))
    tflops, vram = added(result)
    assert tflops >= 260 and vram >= 64 * 2**30 and result.covers_gap
    assert all(o.capacity_type == "OnDemand" and Decimal(o.hourly_price) > 0 for o in result.offerings)
    assert result.hourly_cost == sum(Decimal(o.hourly_price) for o in result.offerings)


def test_zone_requirement_rules() -> None:
    zones = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1d", "us-east-1c"]}
    result = plan(requirements=[ON_DEMAND, zones])
    assert result.offerings and {o.zone for o in result.offerings} <= {"us-east-1c", "us-east-1d"}


def test_offerings_out_of_capacity_are_skipped_for_the_next_cheapest() -> None:
    first = plan()
    chosen = first.offerings[0]
    until = (NOW + timedelta(minutes=5)).isoformat()
    blocked = {o.key: until for o in VIRGINIA if o.instance_type == chosen.instance_type}
    second = plan(annotations={ANNOTATION_UNAVAILABLE_OFFERINGS: json.dumps(blocked)})
    assert second.offerings and second.offerings[0].instance_type != chosen.instance_type
    assert second.hourly_cost >= first.hourly_cost


def test_regional_prices_apply() -> None:
    assert plan(region="ap-northeast-1").hourly_cost > plan(region="us-east-1").hourly_cost


@pytest.mark.parametrize(("max_tflops", "max_vram"), [(300, 80), (130, 1000), (1000, 40), (64, 15)])
def test_never_past_max_and_says_so(max_tflops: int, max_vram: int) -> None:
    result = plan(("2000", "400Gi"), max_=(str(max_tflops), f"{max_vram}Gi"), requirements=[])
    tflops, vram = added(result)
    assert tflops <= max_tflops and vram <= max_vram * 2**30
    assert any(r.startswith(MAX_RESOURCE_CONSTRAINT_REACHED) for r in result.reasons)


def test_no_gap_and_no_match_plan_nothing_with_a_reason() -> None:
    assert plan(("0", "0")).offerings == ()
    b200 = {"key": "tensor-fusion.ai/gpu-model", "operator": "In", "values": ["B200"]}
    nothing = plan(requirements=[b200])
    assert nothing.offerings == () and any("no priced offering" in r for r in nothing.reasons)


def test_a_creating_claim_whose_gpunode_reports_counts_once() -> None:
    """Regression: min 130 TFLOPS, one Creating claim whose GPUNode already reports 65 TFLOPS →
    a 65 TFLOPS / 16Gi gap (the claim's offer is not counted on top of its GPUNode's report)."""
    result = plan(
        ("130", "32Gi"),
        claims=(claim("pool-a-1", phase="Creating"),),
        nodes=(node("n1", claim_name="pool-a-1"),),
        gpu_nodes=(gpu_node("n1", tflops="65", vram="16Gi"),),
    )
    assert (result.gap.need.tflops, result.gap.need.vram) == (Fraction(65), Fraction(16 * 2**30))
    assert result.offerings
