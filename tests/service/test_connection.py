"""The connection check on the schedule tick: CloudVendorConnectionReady goes True / False with
TensorFusion's reasons from the real per-vendor checks (fakes here; the sandbox in the contract
tests), is written only when it changes, and a failing check never stops the launch."""

from __future__ import annotations

from typing import Any

from gpupool.core.intake.causes import Reconcile
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.constants import LABEL_CLUSTER
from gpupool.core.model.pool import GPUPool
from gpupool.service.errors import PermanentError
from gpupool.service.launch import handle_launch
from tests.service.test_karpenter_mode import KarpenterWorld, karpenter_pool


def tfc(vendor: str) -> TensorFusionCluster:
    return TensorFusionCluster.model_validate(
        {"metadata": {"name": "demo"}, "spec": {"computingVendor": {"name": "main", "type": vendor}}}
    )


def labelled(pool: GPUPool) -> GPUPool:
    meta = pool.metadata.model_copy(update={"labels": {LABEL_CLUSTER: "demo"}})
    return pool.model_copy(update={"metadata": meta})


def tick(world: KarpenterWorld, event_id: str = "tick") -> Any:
    outcome = handle_launch(Reconcile(trigger="schedule", event_id=event_id), world.deps)
    cluster: TensorFusionCluster = world.cluster.get("TensorFusionCluster", "demo")
    assert cluster.status is not None
    (condition,) = [c for c in cluster.status.conditions if c.type == "CloudVendorConnectionReady"]
    return outcome, condition


def test_aws_connection_ok_then_failed_with_the_clouds_message() -> None:
    world = KarpenterWorld(karpenter_pool())
    world.cluster.add(tfc("aws"))
    _, ready = tick(world)
    assert (ready.status, ready.reason) == ("True", "CloudVendorConnectionOK")
    assert world.compute.count("check_connection") == 1
    world.compute.fail_next("check_connection", PermanentError("UnauthorizedOperation: not allowed"))
    outcome, failed = tick(world, "tick-2")
    assert (failed.status, failed.reason) == ("False", "CloudVendorConnectionFailed")
    assert "aws DescribeInstances: UnauthorizedOperation: not allowed" in (failed.message or "")
    assert outcome.errors == [], "a failed check is reported in the condition, not as a launch error"
    assert len(world.karpenter.nodeclaims) == 2, "and the launch went on"


def test_the_condition_is_written_only_when_it_changes() -> None:
    world = KarpenterWorld(karpenter_pool())
    world.cluster.add(tfc("aws"))
    tick(world)
    tick(world, "tick-2")
    assert world.cluster.count("update_cluster_status") == 1


def test_karpenter_check_reads_the_referenced_node_class() -> None:
    world = KarpenterWorld(labelled(karpenter_pool()))
    world.cluster.add(tfc("karpenter"))
    _, ready = tick(world)
    assert ready.status == "True" and "karpenter EC2NodeClass default" in (ready.message or "")
    world.karpenter.node_classes.clear()
    _, failed = tick(world, "tick-2")
    assert (failed.status, failed.reason) == ("False", "CloudVendorConnectionFailed")
    assert "EC2NodeClass default (karpenter.k8s.aws) not found" in (failed.message or "")


def test_karpenter_crd_missing_fails_the_check() -> None:
    world = KarpenterWorld(karpenter_pool())
    world.cluster.add(tfc("karpenter"))
    world.karpenter.fail_next(
        "check_access", PermanentError("Karpenter's NodeClaim CRD (karpenter.sh/v1) is not installed")
    )
    _, failed = tick(world)
    assert failed.status == "False" and "NodeClaim CRD" in (failed.message or "")


def test_only_the_schedule_tick_checks() -> None:
    world = KarpenterWorld(karpenter_pool())
    world.cluster.add(tfc("aws"))
    handle_launch(Reconcile(trigger="pod.unschedulable", event_id="e1"), world.deps)
    assert world.compute.count("check_connection") == 0
    # EventBridge and EventBridge Scheduler ticks carry their source in the trigger.
    handle_launch(Reconcile(trigger="schedule:aws.scheduler", event_id="e2"), world.deps)
    assert world.compute.count("check_connection") == 1
