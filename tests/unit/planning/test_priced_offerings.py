"""select_offering_prices: live prices over the shipped catalog, each price naming its source and age.

Covers the rules of `core.planning.priced_offerings`: no read → the catalog's offerings; a live
price replaces the catalog's (and says so, with its read time); live zones replace the catalog's;
a type only the read described is offered when the catalog knows its GPU model; a price the read
lacks comes from the catalog with the read's problem in its source; nothing is priced at zero.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpupool.core.catalog import load_catalog
from gpupool.core.catalog.live import LiveInstanceType, LivePrices
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.planning.priced_offerings import describe_price, price_age, select_offering_prices

READ_AT = datetime(2026, 12, 7, 17, 0, tzinfo=UTC)
REGION = "us-east-1"
CATALOG = load_catalog("aws")


def live(**overrides: object) -> LivePrices:
    body: dict[str, object] = {
        "region": REGION,
        "read_at": READ_AT,
        "on_demand_source": "AWS Pricing API",
        "spot_source": "EC2 DescribeSpotPriceHistory",
    }
    body.update(overrides)
    return LivePrices(**body)  # type: ignore[arg-type]


def by_key(offerings: tuple) -> dict:  # type: ignore[type-arg]
    return {o.key: o for o in offerings}


def test_without_a_read_the_offerings_are_the_catalogs_each_naming_its_catalog_source() -> None:
    ours = select_offering_prices(CATALOG, REGION, None)
    shipped = catalog_offerings("aws", REGION)
    assert [(o.key, o.hourly_price) for o in ours] == [(o.key, o.hourly_price) for o in shipped]
    assert all(o.price_source.startswith("catalog: ") and o.priced_at is None for o in ours)
    assert [o.price_source for o in ours] == [o.price_source for o in shipped]
    spot = next(o for o in ours if o.capacity_type == "Spot")
    assert spot.price_source.endswith("(estimate)")  # the catalog marks its Spot figures so


def test_a_live_price_replaces_the_catalogs_and_names_the_api_and_its_time() -> None:
    ours = by_key(select_offering_prices(CATALOG, REGION, live(on_demand={"g4dn.xlarge": Decimal("0.61")})))
    changed = ours["g4dn.xlarge/us-east-1a/OnDemand"]
    assert changed.hourly_price == "0.61"
    assert changed.price_source == "live: AWS Pricing API 2026-12-07T17:00:00Z"
    assert changed.priced_at == READ_AT
    untouched = ours["g5.xlarge/us-east-1a/OnDemand"]
    assert untouched.hourly_price == str(CATALOG.prices(REGION, "g5.xlarge")["on-demand"])
    assert untouched.price_source.startswith("catalog: ")


def test_live_spot_prices_are_per_zone() -> None:
    spot = {("g5.xlarge", "us-east-1a"): Decimal("0.3"), ("g5.xlarge", "us-east-1b"): Decimal("0.4")}
    ours = by_key(select_offering_prices(CATALOG, REGION, live(spot=spot)))
    assert ours["g5.xlarge/us-east-1a/Spot"].hourly_price == "0.3"
    assert ours["g5.xlarge/us-east-1b/Spot"].hourly_price == "0.4"
    assert ours["g5.xlarge/us-east-1c/Spot"].price_source.startswith("catalog: ")


def test_live_zones_replace_the_catalogs_and_a_type_no_zone_offers_is_not_offered() -> None:
    zones = {"g4dn.xlarge": frozenset({"us-east-1b"})}
    ours = by_key(select_offering_prices(CATALOG, REGION, live(zones=zones)))
    assert {o.zone for o in ours.values() if o.instance_type == "g4dn.xlarge"} == {"us-east-1b"}
    assert not any(o.instance_type == "g5.xlarge" for o in ours.values())


def test_a_described_type_the_catalog_lacks_is_offered_with_its_gpu_models_tflops() -> None:
    new = LiveInstanceType(
        name="g4dn.99xlarge", family="g4dn", gpu_model="T4", gpu_count=2, vram_gib_per_gpu=16,
        vcpu=8, memory_gib=32, arch="amd64",
    )  # fmt: skip
    unknown = LiveInstanceType(
        name="x9.large", family="x9", gpu_model="Z1", gpu_count=1, vram_gib_per_gpu=8,
        vcpu=4, memory_gib=16, arch="amd64",
    )  # fmt: skip
    read = live(
        instance_types=(new, unknown),
        on_demand={"g4dn.99xlarge": Decimal("1.5"), "x9.large": Decimal("0.1")},
    )
    ours = by_key(select_offering_prices(CATALOG, REGION, read))
    added = ours["g4dn.99xlarge/us-east-1a/OnDemand"]
    assert (added.tflops.value, added.gpu_count, added.hourly_price) == (130, 2, "1.5")
    assert not any(o.instance_type == "x9.large" for o in ours.values())  # no TFLOPS known for Z1
    assert not any(o.key == "g4dn.99xlarge/us-east-1a/Spot" for o in ours.values())  # no price: not offered


def test_a_failed_read_says_so_in_every_catalog_source() -> None:
    ours = select_offering_prices(
        CATALOG, REGION, None, fallback="live prices unavailable: GetProducts timed out"
    )
    assert ours and all(
        o.price_source.endswith("; live prices unavailable: GetProducts timed out") for o in ours
    )


def test_a_region_the_catalog_lacks_is_offered_from_a_live_read_alone() -> None:
    kind = LiveInstanceType(
        name="g5.xlarge", family="g5", gpu_model="A10G", gpu_count=1, vram_gib_per_gpu=24,
        vcpu=4, memory_gib=16, arch="amd64",
    )  # fmt: skip
    read = live(
        region="eu-north-1",
        instance_types=(kind,),
        zones={"g5.xlarge": frozenset({"eu-north-1a"})},
        on_demand={"g5.xlarge": Decimal("1.1")},
    )
    assert select_offering_prices(CATALOG, "eu-north-1", None) == ()
    (only,) = select_offering_prices(CATALOG, "eu-north-1", read)
    assert (only.key, only.region, only.hourly_price) == (
        "g5.xlarge/eu-north-1a/OnDemand",
        "eu-north-1",
        "1.1",
    )


def test_a_reason_quotes_the_price_its_source_and_its_age() -> None:
    (priced,) = [
        o
        for o in select_offering_prices(CATALOG, REGION, live(on_demand={"g4dn.xlarge": Decimal("0.61")}))
        if o.key == "g4dn.xlarge/us-east-1a/OnDemand"
    ]
    text = describe_price(priced, now=READ_AT + timedelta(minutes=4))
    source = "live: AWS Pricing API 2026-12-07T17:00:00Z"
    assert text == f"g4dn.xlarge/us-east-1a/OnDemand at 0.61 USD/h ({source}, 4m old)"
    assert price_age(None, READ_AT) == "shipped catalog"
    assert price_age(READ_AT, READ_AT + timedelta(hours=5)) == "5h old"


def test_a_claims_recorded_price_source_reads_back_with_its_age() -> None:
    from gpupool.core.planning.priced_offerings import (
        ANNOTATION_PRICE_SOURCE,
        ANNOTATION_PRICED_AT,
        recorded_price_source,
    )

    live_record = {
        ANNOTATION_PRICE_SOURCE: "live: AWS Pricing API 2026-12-07T17:00:00Z",
        ANNOTATION_PRICED_AT: "2026-12-07T17:00:00Z",
    }
    later = READ_AT + timedelta(minutes=30)
    assert recorded_price_source(live_record, later) == "live: AWS Pricing API 2026-12-07T17:00:00Z, 30m old"
    catalog_record = {ANNOTATION_PRICE_SOURCE: "catalog: AWS EC2 On-Demand pricing page"}
    assert (
        recorded_price_source(catalog_record, later)
        == "catalog: AWS EC2 On-Demand pricing page, shipped catalog"
    )
    assert recorded_price_source({}, later) is None
