"""Live offerings in the service: read at most once per TTL per container, bounded in calls and time,
the catalog as fallback; and a launch decided on them.

`LiveOfferings` runs on a fake `Pricing` port that spends the read's `CallBudget` as an adapter
does (once per call) and can be told to fail; the cache is a fresh `PriceCache` per test (the
module's `PRICE_CACHE` is the container's). End state is asserted: the claims launched, their
price annotations, the reads and calls the fake recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from gpupool.core.catalog import load_catalog
from gpupool.core.catalog.live import LivePrices
from gpupool.core.intake.causes import Reconcile
from gpupool.core.model.constants import ANNOTATION_HOURLY_PRICING
from gpupool.core.planning.priced_offerings import ANNOTATION_PRICE_SOURCE
from gpupool.service.launch import handle_launch
from gpupool.service.live_offerings import MAX_PRICING_CALLS, LiveOfferings, PriceBounds, PriceCache
from gpupool.service.pricing_ports import CallBudget, PricingUnavailable
from tests.service.fakes import World, make_pool

REGION = "us-east-1"
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


class FakePricing:
    """Spends `calls_per_read` calls of the budget per read (or until refused), then answers
    `prices` — or raises PricingUnavailable when `fail` is set. `tick` advances the fake
    monotonic clock per call (a slow API)."""

    api_names = ("GetPrices",)

    def __init__(self, prices: dict[str, Decimal], *, calls_per_read: int = 3) -> None:
        self.prices = prices
        self.calls_per_read = calls_per_read
        self.fail: str | None = None
        self.reads = 0
        self.calls = 0
        self.monotonic = 0.0
        self.tick = 0.0

    def read_prices(
        self, region: str, *, budget: CallBudget, now: datetime, instance_types: Sequence[str] = ()
    ) -> LivePrices:
        self.reads += 1
        problems: list[str] = []
        for _ in range(self.calls_per_read):
            try:
                budget.spend("GetPrices")
            except PricingUnavailable as refused:
                problems.append(str(refused))
                break
            self.calls += 1
            self.monotonic += self.tick
        if self.fail is not None:
            raise PricingUnavailable(self.fail)
        return LivePrices(
            region=region,
            read_at=now,
            on_demand=self.prices,
            on_demand_source="Fake Pricing API",
            problems=tuple(problems),
        )


def live_world(
    pricing: FakePricing, *, bounds: PriceBounds | None = None, **pool: object
) -> tuple[World, PriceCache]:
    world = World(make_pool(requirements=ON_DEMAND, **pool))  # type: ignore[arg-type]
    cache = PriceCache()
    offerings = LiveOfferings(
        lambda: load_catalog("aws"),
        REGION,
        lambda: pricing,
        clock=world.clock,
        cache=cache,
        bounds=bounds,
        monotonic=lambda: pricing.monotonic,
    )
    world.deps = replace(world.deps, offerings=offerings)
    return world, cache


def reconcile(event_id: str) -> Reconcile:
    return Reconcile(pool=None, trigger="schedule", event_id=event_id)


def launched(world: World) -> list[tuple[str, str, str]]:
    return sorted(
        (
            c.spec.instance_type or "",
            c.metadata.annotations[ANNOTATION_HOURLY_PRICING],
            c.metadata.annotations.get(ANNOTATION_PRICE_SOURCE, ""),
        )
        for c in world.claims(live_only=True)
    )


def test_a_launch_decides_on_live_prices_and_records_their_source() -> None:
    pricing = FakePricing({"g6.xlarge": Decimal("0.05")})  # far below every catalog price
    world, _ = live_world(pricing)
    outcome = handle_launch(reconcile("e1"), world.deps)
    assert outcome.errors == []
    kinds = launched(world)
    assert kinds and all(kind == "g6.xlarge" and price == "0.05" for kind, price, _ in kinds)
    assert all(source.startswith("live: Fake Pricing API ") for _, _, source in kinds)
    assert pricing.reads == 1


def test_a_failed_read_launches_on_the_catalog_and_the_claim_says_why() -> None:
    pricing = FakePricing({"g6.xlarge": Decimal("0.05")})
    pricing.fail = "GetPrices failed: RequestTimeout"
    world, _ = live_world(pricing)
    assert handle_launch(reconcile("e1"), world.deps).errors == []
    kinds = launched(world)
    assert kinds and all(kind != "g6.xlarge" or price != "0.05" for kind, price, _ in kinds)
    assert all(
        source.startswith("catalog: ")
        and "live prices unavailable: GetPrices failed: RequestTimeout" in source
        for _, _, source in kinds
    )


def test_prices_are_read_once_per_ttl_by_all_the_invocations_of_a_container() -> None:
    pricing = FakePricing({"g6.xlarge": Decimal("0.05")})
    world, _ = live_world(pricing, bounds=PriceBounds(ttl=timedelta(hours=1)))
    for event in range(5):
        handle_launch(reconcile(f"e{event}"), world.deps)
        world.clock.advance(timedelta(minutes=5))
    assert pricing.reads == 1
    world.clock.advance(timedelta(hours=1))
    handle_launch(reconcile("later"), world.deps)
    assert pricing.reads == 2


def test_a_failed_read_is_retried_after_retry_after_and_the_last_good_read_is_kept() -> None:
    pricing = FakePricing({"g6.xlarge": Decimal("0.05")})
    bounds = PriceBounds(ttl=timedelta(hours=1), retry_after=timedelta(minutes=5))
    world, _ = live_world(pricing, bounds=bounds)
    offerings = world.deps.offerings
    assert isinstance(offerings, LiveOfferings)
    good = {o.key: o for o in offerings.current()}
    assert good["g6.xlarge/us-east-1a/OnDemand"].hourly_price == "0.05"
    pricing.fail = "GetPrices failed: Throttling"
    world.clock.advance(timedelta(hours=2))
    kept = {o.key: o for o in offerings.current()}
    assert pricing.reads == 2
    assert kept["g6.xlarge/us-east-1a/OnDemand"].hourly_price == "0.05"  # the last good read
    assert "Throttling" in kept["g5.xlarge/us-east-1a/OnDemand"].price_source
    world.clock.advance(timedelta(minutes=4))
    offerings.current()
    assert pricing.reads == 2  # not before retry_after
    world.clock.advance(timedelta(minutes=2))
    offerings.current()
    assert pricing.reads == 3


@pytest.mark.parametrize("wanted", [MAX_PRICING_CALLS - 1, MAX_PRICING_CALLS, 10 * MAX_PRICING_CALLS])
def test_no_invocation_makes_more_than_the_stated_number_of_pricing_calls(wanted: int) -> None:
    pricing = FakePricing({"g6.xlarge": Decimal("0.05")}, calls_per_read=wanted)
    world, cache = live_world(pricing)
    handle_launch(reconcile("e1"), world.deps)
    assert pricing.reads == 1
    assert pricing.calls == min(wanted, MAX_PRICING_CALLS)
    before = pricing.calls
    handle_launch(reconcile("again"), world.deps)  # within the TTL: no call at all
    assert pricing.calls == before
    cache.clear()  # a new container: one more read, as bounded as the first
    handle_launch(reconcile("new-container"), world.deps)
    assert pricing.calls - before == min(wanted, MAX_PRICING_CALLS)


def test_a_read_past_its_deadline_makes_no_more_calls_and_says_so() -> None:
    pricing = FakePricing({"g6.xlarge": Decimal("0.05")}, calls_per_read=10)
    pricing.tick = 3.0  # every call takes 3 s; the deadline is 8 s
    world, _ = live_world(pricing, bounds=PriceBounds(deadline=timedelta(seconds=8)))
    offerings = world.deps.offerings
    assert isinstance(offerings, LiveOfferings)
    result = {o.key: o for o in offerings.current()}
    assert pricing.calls == 3  # at 0, 3 and 6 s; none started at 9 s
    source = result["g5.xlarge/us-east-1a/OnDemand"].price_source
    assert "GetPrices not made: the read's deadline of 8s has passed" in source


def test_the_bounds_refuse_a_call_bound_beyond_the_stated_maximum() -> None:
    with pytest.raises(ValueError, match="max_calls"):
        PriceBounds(max_calls=MAX_PRICING_CALLS + 1)
