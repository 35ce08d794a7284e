"""nodeProvisioner.budget: the hourly ceilings, the cheapest part of a plan that fits, the
launch decision's events and reasons when a budget refuses, and what each budgetExceedStrategy
decides when the running claims already pass the budget (table tests)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gpupool.core.decisions.launch import plan_launch
from gpupool.core.model.constants import LABEL_DO_NOT_DISRUPT
from gpupool.core.model.pool import Budget, GPUPool
from gpupool.core.planning.budget import (
    BudgetError,
    budget_limits,
    check_budget,
    fleet_hourly,
    select_budget_terminations,
)
from gpupool.core.planning.plan import CreateClaim, DeleteClaim, LaunchInstance, RecordEvent
from tests.unit.decisions.builders import NOW, claim, gpu_node, node, offering, pool, snapshot, worker

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


# ---- budgetExceedStrategy: the running claims already pass the budget ---------------------


def priced(name: str, price: str, **kwargs: Any) -> Any:
    return claim(name, annotations={"tensor-fusion.ai/hourly-pricing": price}, **kwargs)


def test_terminations_stop_once_the_rate_fits() -> None:
    claims = [priced("a", "1.0"), priced("b", "0.5"), priced("c", "0.25")]
    # $36/day = $1.5/h; running $1.75/h: ending "b" (0.5) is enough when it comes first
    overrun = select_budget_terminations(budget("36", "100000", "100000"), claims, [claims[1], claims[0]])
    assert overrun is not None and overrun.terminate == ("b",) and overrun.resolved
    assert overrun.remaining_hourly == Decimal("1.25")
    assert select_budget_terminations(budget("42", "100000", "100000"), claims, claims) is None
    assert select_budget_terminations(None, claims, claims) is None


def test_when_the_candidates_are_not_enough_all_go_and_it_says_so() -> None:
    claims = [priced("a", "1.0"), priced("b", "1.0")]
    overrun = select_budget_terminations(budget("12", "100000", "100000"), claims, [claims[0]])
    assert overrun is not None and overrun.terminate == ("a",) and not overrun.resolved
    assert "still $1.000/h" in overrun.message(terminating=True)


def over_budget_snapshot(strategy: str, **extra: Any) -> Any:
    # $24/day = $1/h, running: idle 0.526 + busy 0.805 + in-flight 0.4 = $1.731/h; no gap (min 0)
    the_pool = budgeted_pool({"budgetPerDay": "24", "budgetExceedStrategy": strategy}, min_=None)
    claims = [priced("idle", "0.526"), priced("busy", "0.805"), priced("flying", "0.4", phase="Pending")]
    nodes = [node("n-idle", claim_name="idle", **extra), node("n-busy", claim_name="busy")]
    return snapshot(
        the_pool,
        claims=claims,
        nodes=nodes,
        gpu_nodes=[gpu_node("n-idle"), gpu_node("n-busy")],
        worker_pods=[worker("w", "n-busy")],
    )


def test_alert_and_terminate_ends_the_least_disruptive_claims_first() -> None:
    plan = plan_launch(over_budget_snapshot("AlertAndTerminateVM"), [CHEAP], now=NOW, suffixes=SUFFIXES)
    deleted = [a.claim for a in plan.actions if isinstance(a, DeleteClaim)]
    # in flight (no node) first, then the idle node: 1.731 − 0.4 − 0.526 = 0.805 ≤ 1; busy stays
    assert deleted == ["flying", "idle"]
    assert all(a.reason == "BudgetExceeded" for a in plan.actions if isinstance(a, DeleteClaim))
    events = [a for a in plan.actions if isinstance(a, RecordEvent)]
    assert [e.reason for e in events] == ["BudgetExceeded"]
    assert "terminating 2 node(s): flying, idle" in events[0].message
    # the Pending claim that is being ended is not launched again in the same plan
    assert not any(isinstance(a, LaunchInstance) and a.claim == "flying" for a in plan.actions)


def test_alert_only_alerts_and_terminates_nothing() -> None:
    plan = plan_launch(over_budget_snapshot("AlertOnly"), [CHEAP], now=NOW, suffixes=SUFFIXES)
    assert not any(isinstance(a, DeleteClaim) for a in plan.actions)
    events = [a for a in plan.actions if isinstance(a, RecordEvent)]
    assert [e.reason for e in events] == ["BudgetExceeded"]
    assert "AlertOnly: nothing is terminated" in events[0].message
    assert any("$1.731/h running passes budgetPerDay $24" in r for r in plan.reasons)


def test_a_do_not_disrupt_node_is_never_terminated_for_the_budget() -> None:
    the_snapshot = over_budget_snapshot("AlertAndTerminateVM", labels={LABEL_DO_NOT_DISRUPT: "true"})
    plan = plan_launch(the_snapshot, [CHEAP], now=NOW, suffixes=SUFFIXES)
    # "idle" is protected, so the busy node goes after the in-flight claim
    assert [a.claim for a in plan.actions if isinstance(a, DeleteClaim)] == ["flying", "busy"]


def test_a_pool_within_its_budget_terminates_nothing() -> None:
    strategy = {"budgetPerDay": "100", "budgetExceedStrategy": "AlertAndTerminateVM"}
    the_pool = budgeted_pool(strategy, min_=None)
    plan = plan_launch(snapshot(the_pool, claims=[priced("a", "1.0")]), [CHEAP], now=NOW, suffixes=SUFFIXES)
    assert not any(isinstance(a, DeleteClaim | RecordEvent) for a in plan.actions)
