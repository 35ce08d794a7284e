"""gpupool's side in Karpenter mode on a short trace: the pool asks Karpenter for NodeClaims, the
simulated Karpenter launches them with the Provisioned run's cloud fates (boot/join times, spot
interruptions, capacity failures), and the same violation rules find nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_instance_id
from gpupool.simulation.capacity.engine import run_policy
from gpupool.simulation.capacity.gpupool_policy import GpupoolDriver
from gpupool.simulation.capacity.karpenter_side import KarpenterDriver
from gpupool.simulation.capacity.pool_spec import PoolSpec, gpupool_pool
from gpupool.simulation.capacity.run import CapacityRun, load_demand, simulate
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig

TRACE = Path(__file__).resolve().parents[3] / "fixtures" / "traces" / "capacity_two_hours.csv"
RUN = CapacityRun(days=0.1)
KARPENTER = PoolSpec(mode="karpenter")


def _run(driver: GpupoolDriver) -> dict[str, int]:
    report = run_policy(
        driver, load_demand(TRACE, window_seconds=0), window_seconds=RUN.window_seconds, limits=RUN.limits
    )
    assert sum(report.violations.values()) == 0, report.violations
    return dict(report.counters)


def test_the_pool_is_karpenter_mode_with_a_node_class_ref_per_cloud() -> None:
    aws = gpupool_pool(KARPENTER).to_manifest()["spec"]["nodeManagerConfig"]
    assert aws["provisioningMode"] == "Karpenter"
    assert aws["nodeProvisioner"]["karpenterNodeClassRef"]["kind"] == "EC2NodeClass"
    assert "nodeClass" not in aws["nodeProvisioner"]
    alibaba = gpupool_pool(PoolSpec(cloud="alibaba", mode="karpenter")).to_manifest()
    assert alibaba["spec"]["nodeManagerConfig"]["nodeProvisioner"]["karpenterNodeClassRef"]["kind"] == (
        "ECSNodeClass"
    )
    with pytest.raises(ValueError, match="unknown mode"):
        PoolSpec(mode="direct")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Karpenter-mode pool"):
        KarpenterDriver(PoolSpec(), CloudFates(FatesConfig()))


def test_karpenter_launches_with_the_provisioned_worlds_fates_and_nodes_join() -> None:
    config = FatesConfig(seed=5, spot_interruption_share=0.0, capacity_failure_share=0.0)
    driver = KarpenterDriver(KARPENTER, CloudFates(config))
    counters = _run(driver)
    assert counters["launches"] == len(driver.tracked) > 0
    assert driver.compute.instances == {}, "gpupool launched no cloud instance itself"
    fates = CloudFates(config)
    for n, (instance_id, tracked) in enumerate(driver.tracked.items()):
        assert instance_id == nodeclaim_instance_id(tracked.claim)
        assert tracked.fate == fates.fate(n, tracked.offering.capacity_type or "OnDemand")
    joined = [t for t in driver.tracked.values() if t.joined and not t.ended]
    assert joined
    for tracked in joined:
        status = driver.karpenter.get_nodeclaim(tracked.claim).status
        assert {c.type for c in status.conditions if c.status == "True"} == {
            "Launched",
            "Registered",
            "Initialized",
            "Ready",
        }
        assert status.node_name == tracked.claim and tracked.claim in driver.cluster.objects["Node"]
        claim = driver.cluster.objects["GPUNodeClaim"][tracked.claim]
        assert claim.status.phase == "Bound"
        assert claim.status.instance_id == nodeclaim_instance_id(tracked.claim)


def test_interruptions_are_karpenters_and_the_claims_are_replaced_without_a_violation() -> None:
    driver = KarpenterDriver(KARPENTER, CloudFates(FatesConfig(seed=5, spot_interruption_share=1.0)))
    counters = _run(driver)
    interrupted = [t for t in driver.tracked.values() if t.warned]
    assert interrupted and counters["interruptions_handled"] == len(interrupted)
    assert all(t.ended for t in interrupted)
    assert all(t.claim not in driver.karpenter.nodeclaims for t in interrupted)


def test_a_world_without_capacity_fails_every_nodeclaim_and_leaves_none_behind() -> None:
    run = CapacityRun(
        days=0.05, policies=("gpupool",), fates=FatesConfig(capacity_failure_share=1.0), pool=KARPENTER
    )
    (report,) = simulate(run, load_demand(TRACE, window_seconds=0))
    assert report.counters.get("launches", 0) == 0 and report.counters["launch_failures"] > 0
    assert report.cost == 0 and report.unserved == report.pods
    assert report.violations["belowMin"] > 0
