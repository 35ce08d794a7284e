"""plan_launch on live prices: the decision follows the live price where it differs from the catalog's,
falls back to the catalog when the read failed — and says which, with the price's source and age,
in its reasons and on the claim it records."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from gpupool.core.catalog import load_catalog
from gpupool.core.catalog.live import LivePrices
from gpupool.core.decisions.launch import plan_launch
from gpupool.core.planning.plan import CreateClaim, LaunchInstance, Plan
from gpupool.core.planning.priced_offerings import (
    ANNOTATION_PRICE_SOURCE,
    ANNOTATION_PRICED_AT,
    select_offering_prices,
)
from tests.unit.decisions.builders import NOW, pool, snapshot

CATALOG = load_catalog("aws")
REGION = "us-east-1"
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
SUFFIXES = [f"{i:03d}" for i in range(10)]
READ_AT = NOW - timedelta(minutes=3)


def decide(offerings: tuple) -> Plan:  # type: ignore[type-arg]
    the_pool = pool(min_=("65", "16Gi"), requirements=ON_DEMAND)
    return plan_launch(snapshot(the_pool), offerings, now=NOW, suffixes=SUFFIXES)


def launched(plan: Plan) -> list[str]:
    return [a.offering.instance_type for a in plan.actions if isinstance(a, LaunchInstance)]


def test_live_prices_change_the_decision_where_they_differ_from_the_catalogs() -> None:
    by_catalog = decide(select_offering_prices(CATALOG, REGION, None))
    (cheapest,) = launched(by_catalog)
    dearer = LivePrices(
        region=REGION,
        read_at=READ_AT,
        on_demand={cheapest: Decimal("50")},  # the catalog's choice now costs far more
        on_demand_source="AWS Pricing API",
    )
    by_live = decide(select_offering_prices(CATALOG, REGION, dearer))
    (chosen,) = launched(by_live)
    assert chosen != cheapest
    price_lines = [r for r in by_live.reasons if r.startswith("price: ")]
    assert price_lines and "catalog: " in price_lines[0] and "shipped catalog" in price_lines[0]
    assert any(r.startswith("price: ") and "catalog: " in r for r in by_catalog.reasons)


def test_a_live_price_in_the_reasons_and_on_the_claim_names_its_source_and_age() -> None:
    by_catalog = decide(select_offering_prices(CATALOG, REGION, None))
    (cheapest,) = launched(by_catalog)
    cheaper = LivePrices(
        region=REGION,
        read_at=READ_AT,
        on_demand={cheapest: Decimal("0.1")},
        on_demand_source="AWS Pricing API",
    )
    plan = decide(select_offering_prices(CATALOG, REGION, cheaper))
    assert launched(plan) == [cheapest]
    (line,) = [r for r in plan.reasons if r.startswith("price: ")]
    assert line.endswith("at 0.1 USD/h (live: AWS Pricing API 2026-01-01T11:57:00Z, 3m old)")
    (create,) = [a for a in plan.actions if isinstance(a, CreateClaim)]
    annotations = create.manifest.metadata.annotations
    assert annotations[ANNOTATION_PRICE_SOURCE] == "live: AWS Pricing API 2026-01-01T11:57:00Z"
    assert annotations[ANNOTATION_PRICED_AT] == "2026-01-01T11:57:00Z"


def test_a_failed_read_falls_back_to_the_catalog_and_says_so_in_the_reasons() -> None:
    why = "live prices unavailable: GetProducts not made: the read's deadline of 8s has passed"
    fallback = decide(select_offering_prices(CATALOG, REGION, None, fallback=why))
    assert launched(fallback) == launched(decide(select_offering_prices(CATALOG, REGION, None)))
    (line,) = [r for r in fallback.reasons if r.startswith("price: ")]
    assert "catalog: " in line and why in line
    (create,) = [a for a in fallback.actions if isinstance(a, CreateClaim)]
    assert why in create.manifest.metadata.annotations[ANNOTATION_PRICE_SOURCE]
    assert ANNOTATION_PRICED_AT not in create.manifest.metadata.annotations
