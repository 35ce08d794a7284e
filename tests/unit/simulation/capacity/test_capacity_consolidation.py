"""The simulation's consolidation policy and its honest prices: with `gpupool+consolidation` the
node agent publishes GPU objects and workers carry the extender's allocation annotations (in
Provisioned and Karpenter mode), so the allocator reads what each GPU holds; min and warm in GPUs;
Spot prices only from a given discount (the catalog's are estimates), repriced off On-Demand; the
idle beyond min and warm is counted per minute."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from gpupool.core.allocator.build import rebuild_allocator
from gpupool.simulation.capacity.engine import run_policy
from gpupool.simulation.capacity.gpupool_policy import GpupoolDriver
from gpupool.simulation.capacity.karpenter_side import KarpenterDriver
from gpupool.simulation.capacity.ledger import InstanceRecord, Ledger
from gpupool.simulation.capacity.pool_spec import (
    PoolSpec,
    cheapest_per_gpu,
    pool_offerings,
    reserve_gpus,
    spot_pricing,
)
from gpupool.simulation.capacity.run import CapacityRun, load_demand
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig

TRACE = Path(__file__).resolve().parents[3] / "fixtures" / "traces" / "capacity_two_hours.csv"
RUN = CapacityRun(days=0.05)


@pytest.mark.parametrize("mode", ["provisioned", "karpenter"])
def test_consolidating_pool_publishes_what_each_gpu_holds(mode: str) -> None:
    spec = PoolSpec(capacity_types=("OnDemand",), consolidation=True, mode=mode)  # type: ignore[arg-type]
    fates = CloudFates(FatesConfig(seed=1, capacity_failure_share=0.0))
    driver = KarpenterDriver(spec, fates) if mode == "karpenter" else GpupoolDriver(spec, fates)
    assert driver.name == "gpupool+consolidation"
    report = run_policy(
        driver, load_demand(TRACE, window_seconds=0), window_seconds=RUN.window_seconds, limits=RUN.limits
    )
    assert sum(report.violations.values()) == 0
    objects = driver.cluster.objects
    assert objects["GPU"], "the node agent publishes one GPU object per device"
    workers = [p for p in objects["Pod"].values() if p.spec.node_name]
    assert workers
    allocator, warnings = rebuild_allocator(gpus=objects["GPU"].values(), pods=workers)
    assert warnings == []
    assert len(allocator.state.allocations) == len(workers), "every worker's allocation is read back"


def test_the_plain_gpupool_pool_stays_when_empty() -> None:
    pool = GpupoolDriver(PoolSpec(), CloudFates(FatesConfig())).cluster.objects["GPUPool"]["sim-pool"]
    assert pool.spec.node_manager_config.node_compaction.policy == "WhenEmpty"
    consolidating = GpupoolDriver(PoolSpec(consolidation=True), CloudFates(FatesConfig()))
    pool = consolidating.cluster.objects["GPUPool"]["sim-pool"]
    assert pool.spec.node_manager_config.node_compaction.policy == "WhenUnderutilized"


def test_min_and_warm_in_gpus_of_the_smallest_gpu() -> None:
    assert reserve_gpus(PoolSpec()) == (2, 4)  # T4: 65 TFLOPS, 16 GiB
    assert reserve_gpus(PoolSpec(cloud="alibaba")) == (2, 4)


def test_spot_rests_on_a_given_discount_never_on_an_estimate() -> None:
    on_demand = PoolSpec(capacity_types=("OnDemand",))
    assert spot_pricing(on_demand).discount is None
    assert "estimate, not a quote" in spot_pricing(on_demand).describe()
    with pytest.raises(ValueError, match="give --spot-discount"):
        spot_pricing(PoolSpec(capacity_types=("OnDemand", "Spot")))
    given = PoolSpec(capacity_types=("OnDemand", "Spot"), spot_discount=Decimal("0.6"))
    assert spot_pricing(given).discount == Decimal("0.6")
    prices = {
        (o.instance_type, o.zone, o.capacity_type): Decimal(o.hourly_price) for o in pool_offerings(given)
    }
    od = prices[("g4dn.xlarge", "us-east-1a", "OnDemand")]
    assert prices[("g4dn.xlarge", "us-east-1a", "Spot")] == (od * Decimal("0.4")).quantize(
        Decimal("0.000001")
    )
    with pytest.raises(ValueError, match="spot-discount"):
        replace(given, spot_discount=Decimal(1))


def test_idle_beyond_min_and_warm_is_counted_each_minute() -> None:
    ledger = Ledger("x", reserve=(2, 4))
    ledger.sample(0, 0.0, used_gpus=0.0)  # no instance: nothing beyond
    for i in range(7):
        ledger.launched(InstanceRecord(f"i-{i}", "o", 1, Decimal("1"), 0.0))
    ledger.sample(60, 1.5, used_gpus=1.5)  # 7 live, need max(2, 1.5 + 4) = 5.5: 1.5 beyond
    ledger.sample(120, 0.0, used_gpus=0.0)  # need max(2, 4) = 4: 3 beyond
    assert ledger.beyond_gpu_minutes == pytest.approx(4.5)
    assert ledger.report(until=180, pods=0, violations={}).idle_beyond_reserve == pytest.approx(4.5 / 60)


def test_the_floor_is_whole_gpus_for_what_pods_use_plus_warm() -> None:
    ledger = Ledger("x", reserve=(2, 4))
    ledger.sample(0, 0.0, used_gpus=0.0)  # need max(2, 4) = 4: 4 GPUs, none idle beyond
    ledger.sample(60, 1.5, used_gpus=1.5)  # need 5.5: 6 GPUs at the least, 0.5 of them beyond
    ledger.sample(120, 2.0, used_gpus=2.0 + 1e-12)  # a sum of shares a hair over 6 is 6
    report = ledger.report(until=180, pods=0, violations={})
    assert ledger.floor_gpu_minutes == 16 and ledger.floor_beyond_gpu_minutes == pytest.approx(0.5)
    assert report.floor_gpu_hours == pytest.approx(16 / 60)
    assert report.to_json()["floorIdleBeyondMinWarmGpuHours"] == round(0.5 / 60, 2)


def test_the_floor_is_priced_at_the_pools_cheapest_on_demand_gpu() -> None:
    assert cheapest_per_gpu(PoolSpec()) == ("g4dn.xlarge", Decimal("0.526"))
    name, per_gpu = cheapest_per_gpu(PoolSpec(cloud="alibaba"))
    prices = {
        o.instance_type: Decimal(o.hourly_price) / o.gpu_count
        for o in pool_offerings(PoolSpec(cloud="alibaba"))
        if o.capacity_type == "OnDemand" and o.instance_type in PoolSpec(cloud="alibaba").instance_types
    }
    assert per_gpu == min(prices.values()) and prices[name] == per_gpu


def test_why_consolidation_drained_nothing_is_counted_without_figures() -> None:
    from gpupool.simulation.capacity.gpupool_policy import consolidation_refusal

    node = "node sim-pool-00012: not consolidated: available vram would drop to 47.2Gi < 64Gi"
    assert consolidation_refusal(node) == "available vram would drop to # < #"
    assert consolidation_refusal("pool sim-pool: 2 claim(s) in flight; consolidation waits") == (
        "# claim(s) in flight"
    )
    assert consolidation_refusal("pool sim-pool: consolidation waits: 0 of 3 allowed") == "# of # allowed"
    assert (
        consolidation_refusal("node n: node n is idle and not needed for warm/min capacity: remove") is None
    )
    ledger = Ledger("x")
    ledger.counters["consolidation refused:b"] += 1
    ledger.counters["consolidation refused:a"] += 2
    assert ledger.report(until=0, pods=0, violations={}).to_json()["consolidationRefusals"] == {
        "a": 2,
        "b": 1,
    }
