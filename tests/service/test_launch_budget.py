"""Launch with a nodeProvisioner.budget smaller than the demand: across repeated and concurrent
invocations and capacity fallbacks, the pool's hourly run rate never passes the budget's ceiling,
and the refusal shows as a BudgetExceeded Event on the pool and in the outcome's reasons. Karpenter
mode goes through the same budget. A budget lowered under what already runs: AlertAndTerminateVM
deletes claims until the rate fits (bind then terminates their instances); AlertOnly only alerts."""

from __future__ import annotations

import threading
from datetime import timedelta
from decimal import Decimal
from typing import Any

from gpupool.core.intake.causes import Reconcile, Sweep
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.budget import fleet_hourly
from gpupool.service.bind import handle_bind
from gpupool.service.errors import CapacityUnavailable
from gpupool.service.launch import handle_launch
from tests.service.fakes import OFFERINGS, World, make_pool
from tests.service.test_karpenter_mode import KarpenterWorld, karpenter_pool

PRICES = {o.instance_type: Decimal(o.hourly_price) for o in OFFERINGS}


def with_budget(pool: GPUPool, per_day: str, strategy: str = "AlertOnly") -> GPUPool:
    data = pool.model_dump(by_alias=True, mode="json")
    data["spec"]["nodeManagerConfig"]["nodeProvisioner"]["budget"] = {
        "budgetPerDay": per_day,
        "budgetExceedStrategy": strategy,
    }
    return GPUPool.model_validate(data)


def budgeted(per_day: str, **kwargs: Any) -> GPUPool:
    return with_budget(make_pool(**kwargs), per_day)


def reconcile(event_id: str) -> Reconcile:
    return Reconcile(pool=None, trigger="schedule", event_id=event_id)


def test_a_budget_smaller_than_demand_is_never_passed_and_the_reason_shows() -> None:
    # demand: 10 × 65 TFLOPs; budget $30/day = $1.25/h, two g4dn.xlarge at $0.526
    world = World(budgeted("30", min_tflops="650", min_vram="160Gi"))
    ceiling = Decimal(30) / 24
    reasons: list[str] = []
    for round_ in range(6):
        if round_ == 2:
            world.compute.fail_next("launch", CapacityUnavailable("InsufficientInstanceCapacity"))
        outcome = handle_launch(Reconcile(pool=None, trigger="schedule", event_id=f"e{round_}"), world.deps)
        assert outcome.errors == []
        reasons.extend(outcome.plan.reasons)
        assert fleet_hourly(world.claims()) <= ceiling
        # what the cloud actually runs, at the catalog's prices, stays under it too
        assert sum((PRICES[i.instance_type or ""] for i in world.compute.live()), Decimal(0)) <= ceiling
        world.clock.advance(timedelta(minutes=10))
    assert 1 <= len(world.claims(live_only=True)) <= 2
    events = world.cluster.events_with("BudgetExceeded")
    assert events and "budgetPerDay $30" in str(events[0]["message"])
    assert any("would pass budgetPerDay $30" in r for r in reasons)


def test_concurrent_invocations_do_not_pass_the_budget_together() -> None:
    world = World(budgeted("30", min_tflops="650", min_vram="160Gi"))
    world.cluster.read_delay = 0.02
    barrier = threading.Barrier(6)

    def invoke(index: int) -> None:
        barrier.wait()
        handle_launch(
            Reconcile(pool=None, trigger="schedule", event_id=f"c{index}"), world.with_holder(f"h{index}")
        )

    threads = [threading.Thread(target=invoke, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fleet_hourly(world.claims()) <= Decimal(30) / 24
    assert len(world.compute.live()) == 2


def test_karpenter_mode_goes_through_the_same_budget() -> None:
    world = KarpenterWorld(with_budget(karpenter_pool(min_tflops="650", min_vram="160Gi"), "30"))
    outcome = handle_launch(reconcile("k1"), world.deps)
    assert outcome.errors == []
    assert len(world.karpenter.nodeclaims) == 2  # $1.25/h: two g4dn.xlarge at $0.526, not ten
    assert fleet_hourly(world.claims()) <= Decimal(30) / 24
    assert any("launching 2 of 10 node(s)" in r for r in outcome.plan.reasons)
    assert world.cluster.events_with("BudgetExceeded")


def lowered_budget_world(strategy: str) -> tuple[World, Decimal]:
    """Four g4dn.xlarge launched without a budget ($2.104/h), then a $30/day budget ($1.25/h)."""
    world = World(make_pool(min_tflops="260", min_vram="64Gi"))
    assert handle_launch(reconcile("before"), world.deps).errors == []
    assert len(world.compute.live()) == 4
    world.cluster.add(with_budget(world.pool(), "30", strategy))
    return world, Decimal(30) / 24


def live_hourly(world: World) -> Decimal:
    return sum((PRICES[i.instance_type or ""] for i in world.compute.live()), Decimal(0))


def test_alert_and_terminate_vm_brings_what_runs_back_under_the_budget() -> None:
    world, ceiling = lowered_budget_world("AlertAndTerminateVM")
    outcome = handle_launch(reconcile("after"), world.deps)
    assert outcome.errors == []
    assert len(world.claims(live_only=True)) == 2  # 2 × 0.526 = 1.052 ≤ 1.25; a third would pass it
    handle_bind(Sweep(event_id="s1"), world.deps)  # deleting claims: their instances terminate
    assert live_hourly(world) <= ceiling and len(world.compute.live()) == 2
    events = world.cluster.events_with("BudgetExceeded")
    assert events and "terminating 2 node(s)" in str(events[0]["message"])
    # the next round neither terminates more nor launches past the budget again
    for round_ in range(3):  # (nodes never join here: stay inside the registration timeout)
        world.clock.advance(timedelta(minutes=1))
        assert handle_launch(reconcile(f"later{round_}"), world.deps).errors == []
        handle_bind(Sweep(event_id=f"s{round_ + 2}"), world.deps)
        assert live_hourly(world) <= ceiling and len(world.compute.live()) == 2


def test_alert_only_keeps_what_runs_and_says_the_budget_is_passed() -> None:
    world, _ = lowered_budget_world("AlertOnly")
    outcome = handle_launch(reconcile("after"), world.deps)
    handle_bind(Sweep(event_id="s1"), world.deps)
    assert outcome.errors == [] and len(world.compute.live()) == 4
    assert len(world.claims(live_only=True)) == 4
    assert any("AlertOnly: nothing is terminated" in r for r in outcome.plan.reasons)
    assert world.cluster.events_with("BudgetExceeded")
