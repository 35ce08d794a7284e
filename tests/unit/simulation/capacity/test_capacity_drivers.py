"""Both drivers on a short trace: gpupool's real services handle spot interruptions with no
violation; TensorFusion's side launches On-Demand only; a cloud with no capacity serves nothing
and the shortfall under min is counted, not hidden."""

from __future__ import annotations

from pathlib import Path

from gpupool.simulation.capacity.engine import run_policy
from gpupool.simulation.capacity.gpupool_policy import GpupoolDriver
from gpupool.simulation.capacity.pool_spec import PoolSpec
from gpupool.simulation.capacity.run import CapacityRun, load_demand, simulate
from gpupool.simulation.capacity.tensorfusion_side import TensorFusionDriver
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig

TRACE = Path(__file__).resolve().parents[3] / "fixtures" / "traces" / "capacity_two_hours.csv"
RUN = CapacityRun(days=0.1)


def test_gpupool_handles_every_spot_interruption_without_a_violation() -> None:
    fates = CloudFates(FatesConfig(seed=5, spot_interruption_share=1.0, capacity_failure_share=0.0))
    driver = GpupoolDriver(PoolSpec(), fates)
    report = run_policy(
        driver, load_demand(TRACE, window_seconds=0), window_seconds=RUN.window_seconds, limits=RUN.limits
    )
    interrupted = [t for t in driver.tracked.values() if t.warned]
    assert interrupted and report.counters["interruptions_handled"] == len(interrupted)
    assert all(
        t.ended
        for t in interrupted
        if RUN.window_seconds >= t.launched + (t.fate.interrupted_after or 0) + 120
    )
    assert sum(report.violations.values()) == 0
    claims = driver.cluster.objects["GPUNodeClaim"]
    bound = [c for c in claims.values() if c.status is not None and c.status.phase == "Bound"]
    assert bound, "the bind service bound the nodes that joined"


def test_tensorfusion_launches_on_demand_only() -> None:
    fates = CloudFates(FatesConfig(seed=5, spot_interruption_share=1.0))
    driver = TensorFusionDriver(PoolSpec(), fates)
    report = run_policy(
        driver, load_demand(TRACE, window_seconds=0), window_seconds=RUN.window_seconds, limits=RUN.limits
    )
    assert report.counters["launches"] > 0
    assert all(r.offering.endswith("/OnDemand") for r in driver.ledger.instances.values())
    assert report.counters.get("interruptions_handled", 0) == 0


def test_a_world_without_capacity_serves_nothing_and_says_so() -> None:
    run = CapacityRun(days=0.05, fates=FatesConfig(capacity_failure_share=1.0))
    demands = load_demand(TRACE, window_seconds=0)
    for report in simulate(run, demands):
        assert report.counters.get("launches", 0) == 0
        assert report.counters["launch_failures"] > 0
        assert report.cost == 0 and report.unserved == report.pods
        assert report.violations["belowMin"] > 0  # past the warm-up with nothing running


def test_an_on_demand_only_pool_gets_no_spot_from_gpupool_and_every_invocation_is_counted() -> None:
    fates = CloudFates(FatesConfig(seed=5, spot_interruption_share=1.0))
    driver = GpupoolDriver(PoolSpec(capacity_types=("OnDemand",)), fates)
    report = run_policy(
        driver, load_demand(TRACE, window_seconds=0), window_seconds=RUN.window_seconds, limits=RUN.limits
    )
    assert report.counters["launches"] > 0
    assert all(r.offering.endswith("/OnDemand") for r in driver.ledger.instances.values())
    assert report.counters.get("interruptions_handled", 0) == 0
    invocations = report.to_json()["invocations"]
    assert invocations["compact"] == int(RUN.window_seconds // 60) + 1  # one schedule tick a minute
    assert invocations["launch"] >= invocations["compact"] and invocations["bind"] > invocations["compact"]
