"""The bundled GPU catalog: coverage of families and regions, positive sourced prices, T4 = 65 TFLOPS,
and the rule that an instance type without a known price is never offered."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpupool.core.catalog import CatalogError, load_catalog, parse_catalog

AWS_FAMILIES = {"g4dn", "g5", "g6", "g6e", "gr6", "p4d", "p4de", "p5", "p5e"}
ALIBABA_FAMILIES = {"gn6i", "gn6v", "gn7i", "gn7e"}


def test_aws_has_forty_types_in_every_required_family() -> None:
    catalog = load_catalog("aws")
    assert len(catalog.instance_types) >= 40
    assert {t.family for t in catalog.instance_types} >= AWS_FAMILIES


def test_alibaba_has_twelve_gn_types_in_every_required_family() -> None:
    catalog = load_catalog("alibaba")
    assert len(catalog.instance_types) >= 12
    assert {t.family for t in catalog.instance_types} >= ALIBABA_FAMILIES
    assert all(t.name.startswith("ecs.gn") for t in catalog.instance_types)


@pytest.mark.parametrize(("cloud", "regions"), [("aws", 4), ("alibaba", 3)])
def test_regions_have_zones_on_demand_and_spot_prices(cloud: str, regions: int) -> None:
    catalog = load_catalog(cloud)  # type: ignore[arg-type]
    assert len(catalog.regions) >= regions
    for region in catalog.regions:
        assert region.zones and all(zone.startswith(region.name) for zone in region.zones)
        assert region.on_demand.prices and region.spot is not None and region.spot.prices


@pytest.mark.parametrize("cloud", ["aws", "alibaba"])
def test_every_price_positive_and_every_figure_sourced(cloud: str) -> None:
    catalog = load_catalog(cloud)  # type: ignore[arg-type]
    assert len(catalog.sources.hardware) > 20 and len(catalog.sources.tflops) > 20
    for region in catalog.regions:
        for table in (region.on_demand, region.spot):
            assert table is not None
            assert len(table.source) > 40, f"{region.name}: a source must say where figures come from"
            assert all(price > 0 for price in table.prices.values())
        spot = region.spot.prices if region.spot else {}
        for name, price in spot.items():
            assert price < region.on_demand.prices[name], f"{region.name} {name}: spot above on-demand"


def test_spot_sources_say_they_are_estimates() -> None:
    for cloud in ("aws", "alibaba"):
        for region in load_catalog(cloud).regions:  # type: ignore[arg-type]
            assert region.spot is not None and "estimate" in region.spot.source.lower()


def test_t4_is_65_tflops_everywhere() -> None:
    t4 = [
        t for cloud in ("aws", "alibaba") for t in load_catalog(cloud).instance_types if t.gpu_model == "T4"
    ]  # type: ignore[arg-type]
    assert t4 and all(t.tflops_per_gpu == Decimal(65) for t in t4)


def test_instance_totals_follow_per_gpu_figures() -> None:
    p4d = load_catalog("aws").instance_type("p4d.24xlarge")
    assert p4d is not None
    assert (p4d.gpu_count, p4d.vram_gib, p4d.tflops) == (8, 320, 8 * 312)


def test_unpriced_types_are_never_offered() -> None:
    catalog = load_catalog("aws")
    for region in catalog.regions:
        offered = {o.instance_type.name for o in catalog.offerings(region.name)}
        assert offered == set(region.on_demand.prices) | set(region.spot.prices if region.spot else {})
    # eu-west-1 carries no p5e price, so p5e is offered there in no zone and no capacity type.
    assert "p5e.48xlarge" not in {o.instance_type.name for o in catalog.offerings("eu-west-1")}
    assert catalog.offerings("nowhere-1") == ()


def test_every_offering_has_a_price_and_a_zone_of_its_region() -> None:
    catalog = load_catalog("alibaba")
    offerings = catalog.offerings("cn-beijing")
    assert offerings
    for offering in offerings:
        assert offering.hourly_price > 0 and offering.price_micro_usd > 0
        assert offering.zone.startswith("cn-beijing-")
        assert offering.capacity_type in ("on-demand", "spot")


MINIMAL = """
cloud: aws
currency: USD
sources: {hardware: "instance type pages", tflops: "NVIDIA datasheets"}
instanceTypes:
  - {name: g4dn.xlarge, family: g4dn, gpuModel: T4, gpuCount: 1, tflopsPerGpu: "65", vramGiBPerGpu: 16,
     vcpu: 4, memoryGiB: 16, arch: amd64}
  - {name: g5.xlarge, family: g5, gpuModel: A10G, gpuCount: 1, tflopsPerGpu: "125", vramGiBPerGpu: 24,
     vcpu: 4, memoryGiB: 16, arch: amd64}
regions:
  - name: us-east-1
    zones: [us-east-1a, us-east-1b]
    onDemand: {source: "AWS pricing page, us-east-1", prices: {g4dn.xlarge: "PRICE"}}
"""


def test_a_type_missing_from_the_price_table_is_not_offered() -> None:
    catalog = parse_catalog(MINIMAL.replace("PRICE", "0.526"))
    offerings = catalog.offerings("us-east-1")
    assert {o.instance_type.name for o in offerings} == {"g4dn.xlarge"}
    assert {(o.zone, o.capacity_type) for o in offerings} == {
        ("us-east-1a", "on-demand"),
        ("us-east-1b", "on-demand"),
    }


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (MINIMAL.replace("PRICE", "0"), "positive"),
        (MINIMAL.replace("PRICE", "-1.5"), "positive"),
        (MINIMAL.replace("PRICE", "0.1234567"), "6 decimals"),
        (MINIMAL.replace("PRICE", "0.5").replace("g4dn.xlarge: ", "p9.huge: "), "unknown types"),
        (MINIMAL.replace("PRICE", "0.5").replace('source: "AWS pricing page, us-east-1", ', ""), "source"),
        (MINIMAL.replace("PRICE", "0.5").replace("arch: amd64}", "arch: amd64, colour: red}", 1), "colour"),
        ("cloud: [", "YAML"),
    ],
)
def test_bad_catalog_data_is_rejected_with_the_place(text: str, problem: str) -> None:
    with pytest.raises(CatalogError, match=problem):
        parse_catalog(text)


def test_unknown_cloud_is_rejected() -> None:
    with pytest.raises(CatalogError, match="unknown cloud"):
        load_catalog("gcp")  # type: ignore[arg-type]
