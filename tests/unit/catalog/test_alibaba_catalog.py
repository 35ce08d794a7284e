"""The Alibaba Cloud catalog: the gn families and regions issue 9 asks for, every figure sourced,
spot below pay-as-you-go, and the hardware consistent within a family (same GPU, same memory)."""

from __future__ import annotations

from collections import defaultdict

from gpupool.core.catalog import load_catalog

REGIONS = {"cn-hangzhou", "cn-shanghai", "cn-beijing", "cn-shenzhen", "ap-southeast-1"}
FAMILIES = {"gn6i": "T4", "gn6v": "V100", "gn7": "A100", "gn7i": "A10", "gn7e": "A100"}


def test_every_required_region_prices_every_required_family_on_demand_and_spot() -> None:
    catalog = load_catalog("alibaba")
    assert set(catalog.region_names) >= REGIONS
    for region in REGIONS:
        offered = {(o.instance_type.family, o.capacity_type) for o in catalog.offerings(region)}
        for family in FAMILIES:
            assert {(family, "on-demand"), (family, "spot")} <= offered, (region, family)


def test_families_keep_one_gpu_model_and_memory_and_prices_grow_with_gpus() -> None:
    catalog = load_catalog("alibaba")
    by_family = defaultdict(list)
    for instance_type in catalog.instance_types:
        by_family[instance_type.family].append(instance_type)
    for family, model in FAMILIES.items():
        types = by_family[family]
        assert {t.gpu_model for t in types} == {model} and len({t.vram_gib_per_gpu for t in types}) == 1
        prices = catalog.region("cn-hangzhou").on_demand.prices  # type: ignore[union-attr]
        single = [prices[t.name] for t in types if t.gpu_count == 1]
        multi = [prices[t.name] for t in types if t.gpu_count > 1]
        assert not multi or min(multi) > min(single), family


def test_spot_is_cheaper_and_every_table_names_its_source() -> None:
    catalog = load_catalog("alibaba")
    for region in catalog.regions:
        assert region.spot is not None and "Estimate" in region.spot.source
        assert "DescribePrice" in region.on_demand.source or "Estimate" in region.on_demand.source
        for name, price in region.spot.prices.items():
            assert 0 < price < region.on_demand.prices[name]


def test_gn8is_is_offered_only_where_it_is_sold() -> None:
    catalog = load_catalog("alibaba")
    families = {region: {o.instance_type.family for o in catalog.offerings(region)} for region in REGIONS}
    assert "gn8is" in families["ap-southeast-1"]
    assert not any("gn8is" in found for region, found in families.items() if region.startswith("cn-"))
    l20 = [t for t in catalog.instance_types if t.family == "gn8is"]
    assert l20 and {(t.gpu_model, t.vram_gib_per_gpu) for t in l20} == {("L20", 48)}
