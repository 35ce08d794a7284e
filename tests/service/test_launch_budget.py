"""Launch with a nodeProvisioner.budget smaller than the demand: across repeated and concurrent
invocations and capacity fallbacks, the pool's hourly run rate never passes the budget's ceiling,
and the refusal shows as a BudgetExceeded Event on the pool and in the outcome's reasons."""

from __future__ import annotations

import threading
from datetime import timedelta
from decimal import Decimal

from gpupool.core.intake.causes import Reconcile
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.budget import fleet_hourly
from gpupool.service.errors import CapacityUnavailable
from gpupool.service.launch import handle_launch
from tests.service.fakes import OFFERINGS, World, make_pool

PRICES = {o.instance_type: Decimal(o.hourly_price) for o in OFFERINGS}


def budgeted(per_day: str, **kwargs: str) -> GPUPool:
    data = make_pool(**kwargs).model_dump(by_alias=True, mode="json")
    data["spec"]["nodeManagerConfig"]["nodeProvisioner"]["budget"] = {"budgetPerDay": per_day}
    return GPUPool.model_validate(data)


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
