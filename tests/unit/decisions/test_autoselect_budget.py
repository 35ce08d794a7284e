"""Pricing AutoSelect expansions: the recorded price wins, else the dearest catalog price the
capacity-type requirement allows; an unknown offering has no price and is never admitted."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gpupool.core.decisions.autoselect_budget import (
    ANNOTATION_EXPANSION_POOL,
    affordable_candidate,
    expansion_hourly,
    expansion_spending,
)
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.pool import Budget
from gpupool.core.planning.budget import BudgetError
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.quantity import Quantity


def offering(capacity_type: Any, price: str, zone: str | None = "z1") -> OfferingRef:
    return OfferingRef(
        instance_type="g5.xlarge",
        zone=zone,
        capacity_type=capacity_type,
        tflops=Quantity.parse("125"),
        vram=Quantity.parse("24Gi"),
        gpu_count=1,
        hourly_price=price,
    )


OFFERINGS = (offering("OnDemand", "1.006"), offering("Spot", "0.402"))


def nodeclaim(
    capacity: list[str] | None = None, annotations: dict[str, str] | None = None
) -> KarpenterNodeClaim:
    requirements: list[dict[str, Any]] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]},
    ]
    if capacity is not None:
        requirements.append({"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity})
    return KarpenterNodeClaim.model_validate(
        {"metadata": {"name": "x", "annotations": annotations or {}}, "spec": {"requirements": requirements}}
    )


@pytest.mark.parametrize(
    ("capacity", "price"),
    [(None, "1.006"), (["spot"], "0.402"), (["spot", "on-demand"], "1.006"), (["reserved"], None)],
)
def test_catalog_price_is_the_dearest_the_requirements_allow(
    capacity: list[str] | None, price: str | None
) -> None:
    assert expansion_hourly(nodeclaim(capacity), OFFERINGS) == (Decimal(price) if price else None)


def test_a_recorded_price_wins_over_the_catalog() -> None:
    recorded = nodeclaim(["spot"], {"tensor-fusion.ai/hourly-pricing": "0.3"})
    assert expansion_hourly(recorded, OFFERINGS) == Decimal("0.3")


def test_spending_counts_only_the_pools_expansions_and_admits_up_to_the_ceiling() -> None:
    """Every expansion of the pool there is counts (Karpenter deletes one it cannot launch, so a
    NodeClaim that is still there may bill); another pool's does not."""
    ours = nodeclaim(annotations={ANNOTATION_EXPANSION_POOL: "a"})
    theirs = nodeclaim(annotations={ANNOTATION_EXPANSION_POOL: "b"})
    spending = expansion_spending(
        Budget(budget_per_day="48", budget_per_month="9999", budget_per_quarter="99999"),
        "a",
        [ours, theirs],
        OFFERINGS,
    )
    assert spending is not None and spending.running == Decimal("1.006")  # ceiling $2/h
    candidate = [("g5.xlarge", "z1")]
    # any capacity type allowed: priced on demand, 1.006 + 1.006 > 2 → refused
    assert affordable_candidate(candidate, [], OFFERINGS, spending) is None
    assert (spending.refused, spending.admitted) == (1, Decimal(0))
    spot_only = nodeclaim(["spot"]).spec.requirements
    assert affordable_candidate(candidate, spot_only, OFFERINGS, spending) == (candidate[0], Decimal("0.402"))
    assert spending.admitted == Decimal("0.402")
    assert (
        affordable_candidate([("g5.xlarge", "elsewhere")], spot_only, OFFERINGS, spending) is None
    )  # no price


def test_no_budget_no_spending_and_an_unreadable_budget_raises() -> None:
    assert expansion_spending(None, "a", [], OFFERINGS) is None
    with pytest.raises(BudgetError, match="budgetPerDay"):
        expansion_spending(Budget(budget_per_day="-1"), "a", [], OFFERINGS)
