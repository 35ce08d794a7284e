"""nodeProvisioner.budget: the hourly ceilings, the cheapest part of a plan that fits, and the
launch decision's events and reasons when a budget refuses (table tests)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gpupool.core.decisions.launch import plan_launch
from gpupool.core.model.pool import Budget, GPUPool
from gpupool.core.planning.budget import BudgetError, budget_limits, check_budget, fleet_hourly
from gpupool.core.planning.plan import CreateClaim, LaunchInstance, RecordEvent
from tests.unit.decisions.builders import NOW, claim, offering, pool, snapshot

CHEAP = offering(price="0.526")
MID = offering("g6.xlarge", "121", "24Gi", "0.805")
DEAR = offering("g5.xlarge", "125", "24Gi", "1.006")
SUFFIXES = [f"{i:03d}" for i in range(100)]


def budget(day: str = "100", month: str = "1000", quarter: str = "3000", **extra: str) -> Budget:
    return Budget.model_validate(
        {"budgetPerDay": day, "budgetPerMonth": month, "budgetPerQuarter": quarter, **extra}
    )


def budgeted_pool(the_budget: dict[str, Any] | None, **kwargs: Any) -> GPUPool:
    data = pool(**kwargs).model_dump(by_alias=True, mode="json")
    if the_budget is not None:
        data["spec"]["nodeManagerConfig"]["nodeProvisioner"]["budget"] = the_budget
    return GPUPool.model_validate(data)


def test_limits_are_the_amounts_over_the_longest_periods() -> None:
    limits = {lim.field: lim for lim in budget_limits(budget("48", "744", "2208"))}
    assert limits["budgetPerDay"].hourly == Decimal(2)
    assert limits["budgetPerMonth"].hourly == Decimal(1)  # 31 days
    assert limits["budgetPerQuarter"].hourly == Decimal(1)  # 92 days


@pytest.mark.parametrize(
    ("day", "field"), [("ten", "budgetPerDay"), ("-1", "budgetPerDay"), ("NaN", "budgetPerDay")]
)
def test_an_unreadable_amount_names_its_field(day: str, field: str) -> None:
    with pytest.raises(BudgetError, match=field):
        budget_limits(budget(day))


@pytest.mark.parametrize(
    ("day", "claims", "planned", "allowed"),
    [
        # no limit reached: everything passes, in plan order
        ("1000", [], [DEAR, CHEAP], [DEAR, CHEAP]),
        # $24/day = $1/h: the cheapest first (0.526), then 0.805 would pass 1.0
        ("24", [], [DEAR, MID, CHEAP], [CHEAP]),
        # $48/day = $2/h: 0.526 + 0.805 = 1.331 fits, + 1.006 does not
        ("48", [], [DEAR, MID, CHEAP], [MID, CHEAP]),
        # a running claim at 0.526 uses part of the same $1/h
        ("30", [claim()], [CHEAP, CHEAP], [CHEAP]),
        # a Failed claim does not bill; a deleting one still may
        ("24", [claim(phase="Failed")], [CHEAP], [CHEAP]),
        ("12.624", [claim(deleting=True)], [CHEAP], []),
        # exactly at the ceiling is allowed (0.526 × 24 = 12.624)
        ("12.624", [], [CHEAP], [CHEAP]),
        ("0", [], [CHEAP], []),
    ],
)
def test_the_cheapest_part_that_fits(
    day: str, claims: list[Any], planned: list[Any], allowed: list[Any]
) -> None:
    check = check_budget(budget(day, "100000", "100000"), claims, planned)
    assert list(check.allowed) == allowed
    assert len(check.allowed) + len(check.refused) == len(planned)
    spent = check.running_hourly + sum((Decimal(o.hourly_price) for o in check.allowed), Decimal(0))
    assert not check.allowed or spent <= Decimal(day) / 24


def test_no_budget_allows_everything() -> None:
    check = check_budget(None, [claim()], [DEAR, DEAR])
    assert check.allowed == (DEAR, DEAR) and not check.exceeded
    assert fleet_hourly([claim(), claim(phase="Failed")]) == Decimal("0.526")


def test_tensorfusions_defaults_make_the_month_the_tightest() -> None:
    # an empty `budget: {}` reads as 100 / 1000 / 3000: $1000 over 744 h is $1.344/h
    limit = min(budget_limits(Budget()), key=lambda lim: lim.hourly)
    assert limit.field == "budgetPerMonth" and limit.hourly.quantize(Decimal("0.001")) == Decimal("1.344")


def test_the_month_can_be_the_tightest() -> None:
    check = check_budget(budget("1000", "372", "100000"), [], [CHEAP, CHEAP])  # $0.5/h
    assert check.allowed == () and check.limit is not None and check.limit.field == "budgetPerMonth"
    assert "budgetPerMonth $372" in check.message()


def test_launch_takes_the_part_that_fits_and_says_why() -> None:
    # min 4 × 65 TFLOPs → 4 × g4dn; $30/day = $1.25/h fits two at 0.526
    the_pool = budgeted_pool({"budgetPerDay": "30"}, min_=("260", "64Gi"))
    plan = plan_launch(snapshot(the_pool), [CHEAP], now=NOW, suffixes=SUFFIXES)
    assert sum(isinstance(a, LaunchInstance) for a in plan.actions) == 2
    assert sum(isinstance(a, CreateClaim) for a in plan.actions) == 2
    events = [a for a in plan.actions if isinstance(a, RecordEvent)]
    assert [e.reason for e in events] == ["BudgetExceeded"]
    assert "launching 2 of 4 node(s)" in events[0].message
    assert any("budgetPerDay $30" in r for r in plan.reasons)


def test_launch_refuses_all_when_nothing_fits() -> None:
    the_pool = budgeted_pool({"budgetPerDay": "1"}, min_=("65", "16Gi"))
    plan = plan_launch(snapshot(the_pool), [CHEAP], now=NOW, suffixes=SUFFIXES)
    assert [a.kind for a in plan.actions] == ["record-event"]
    assert "launching 0 of 1 node(s)" in plan.reasons[-1]


def test_an_unreadable_budget_launches_nothing_and_says_so() -> None:
    the_pool = budgeted_pool({"budgetPerDay": "lots"}, min_=("65", "16Gi"))
    plan = plan_launch(snapshot(the_pool), [CHEAP], now=NOW, suffixes=SUFFIXES)
    events = [a for a in plan.actions if isinstance(a, RecordEvent)]
    assert [e.reason for e in events] == ["NodeLaunchFailed"]
    assert not any(isinstance(a, LaunchInstance) for a in plan.actions)
    assert "budgetPerDay 'lots'" in events[0].message


def test_a_pool_without_a_budget_launches_as_before() -> None:
    plan = plan_launch(
        snapshot(budgeted_pool(None, min_=("260", "64Gi"))), [CHEAP], now=NOW, suffixes=SUFFIXES
    )
    assert sum(isinstance(a, LaunchInstance) for a in plan.actions) == 4
