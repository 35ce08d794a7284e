"""AutoSelect expansion under a nodeProvisioner.budget: expansions are priced from the catalog,
the pool's expansion run rate never passes the ceiling however often launch runs, the refusal
shows as a BudgetExceeded Warning on the GPUPool, and an unreadable budget expands nothing; each
expansion records its price's source, as a claim does."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from gpupool.core.decisions.autoselect_budget import ANNOTATION_EXPANSION_POOL, expansion_hourly
from gpupool.core.model.pool import GPUPool
from tests.service.fakes import OFFERINGS
from tests.service.test_autoselect import autoselect_world, expand, expansions, join, pending_pod, place
from tests.service.test_karpenter_mode import KarpenterWorld


def with_budget(world: KarpenterWorld, per_day: str) -> KarpenterWorld:
    pool: GPUPool = world.cluster.get("GPUPool", "pool-a")
    data: dict[str, Any] = pool.to_manifest()
    data["spec"]["nodeManagerConfig"].setdefault("nodeProvisioner", {})["budget"] = {
        "budgetPerDay": per_day,  # the month's and quarter's ceilings kept above the day's
        "budgetPerMonth": "99999",
        "budgetPerQuarter": "99999",
    }
    world.cluster.add(GPUPool.model_validate(data))
    return world


def expansion_rate(world: KarpenterWorld) -> Decimal:
    total = Decimal(0)
    for nodeclaim in expansions(world):
        price = expansion_hourly(nodeclaim, OFFERINGS)
        assert price is not None, f"{nodeclaim.name} has no price"
        total += price
    return total


def test_expansions_stop_at_the_budget_and_the_reason_shows_on_the_pool() -> None:
    # $60/day = $2.50/h; g5.xlarge (the template's type) costs $1.006/h in us-east-1a (the test
    # catalog offers it nowhere else), g6.xlarge $0.805/h: two g5 fit, a third node of any kind does not.
    world = with_budget(autoselect_world(), "60")
    world.cluster.add(*(pending_pod(f"w-{i}") for i in range(5)))
    outcome = expand(world)
    assert outcome.errors == []
    made = expansions(world)
    assert len(made) == 2
    assert expansion_rate(world) == Decimal("2.012") <= Decimal(60) / 24
    for nodeclaim in made:
        assert nodeclaim.metadata.annotations[ANNOTATION_EXPANSION_POOL] == "pool-a"
        assert nodeclaim.metadata.annotations["tensor-fusion.ai/hourly-pricing"] == "1.006"
    (event,) = world.cluster.events_with("BudgetExceeded")
    assert (event["kind"], event["name"], event["type"]) == ("GPUPool", "pool-a", "Warning")
    assert "budgetPerDay $60" in str(event["message"]) and "3 pod(s) not expanded" in str(event["message"])
    assert sum("the budget admits none" in r for r in outcome.plan.reasons) == 3

    for round_ in range(3):  # repeated triggers, nodes joining, pods placed: never past the ceiling
        expand(world, f"again-{round_}")
        place(world, join(world))
        assert expansion_rate(world) <= Decimal(60) / 24
    assert len(expansions(world)) == 2


def test_a_failed_launch_frees_its_share_for_the_next_candidate() -> None:
    world = with_budget(autoselect_world(), "30")  # $1.25/h: one g5.xlarge
    world.cluster.add(pending_pod("w-0"))
    expand(world)
    (first,) = expansions(world)
    world.karpenter.insufficient_capacity(first.name)  # Karpenter deletes what it cannot launch
    expand(world, "e2")
    (second,) = expansions(world)
    # the next candidate: g6.xlarge (the test catalog offers g5.xlarge in us-east-1a only)
    types = [r.values for r in second.spec.requirements if r.key == "node.kubernetes.io/instance-type"]
    assert types == [["g6.xlarge"]]
    assert second.metadata.annotations["tensor-fusion.ai/hourly-pricing"] == "0.805"


def test_an_unreadable_budget_expands_nothing_and_says_which_field() -> None:
    world = with_budget(autoselect_world(), "lots")
    world.cluster.add(pending_pod("w-0"))
    expand(world)
    assert expansions(world) == []
    (event,) = world.cluster.events_with("NodeLaunchFailed")
    assert event["kind"] == "GPUPool" and "budgetPerDay 'lots'" in str(event["message"])


def test_without_a_budget_expansions_still_record_their_price_and_pool() -> None:
    world = autoselect_world()
    world.cluster.add(*(pending_pod(f"w-{i}") for i in range(4)))
    expand(world)
    made = expansions(world)
    assert len(made) == 4 and world.cluster.events_with("BudgetExceeded") == []
    assert {n.metadata.annotations["tensor-fusion.ai/hourly-pricing"] for n in made} == {"1.006"}


def test_expansions_record_where_their_price_came_from_as_a_claim_does() -> None:
    world = autoselect_world()
    read_at = datetime(2026, 12, 7, 16, 0, tzinfo=UTC)
    live = tuple(
        o.model_copy(update={"price_source": "live: AWS Pricing GetProducts", "priced_at": read_at})
        for o in OFFERINGS
    )
    world.deps = replace(world.deps, offerings=live)
    world.cluster.add(pending_pod("w-0"))
    expand(world)
    (made,) = expansions(world)
    notes = made.metadata.annotations
    assert notes["tensor-fusion.ai/hourly-pricing"] == "1.006"
    assert notes["gpupool.io/price-source"] == "live: AWS Pricing GetProducts"
    assert notes["gpupool.io/priced-at"] == "2026-12-07T16:00:00Z"
