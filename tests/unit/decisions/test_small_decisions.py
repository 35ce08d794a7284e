"""Interruption, orphan sweep, compaction guard/due, pool status and pool sync decisions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from gpupool.core.decisions.compaction import compaction_due, compaction_period, plan_compaction
from gpupool.core.decisions.interruption import plan_interruption
from gpupool.core.decisions.orphan_sweep import plan_orphan_nodes, plan_orphan_sweep
from gpupool.core.decisions.pool_status import plan_pool_status
from gpupool.core.decisions.pool_sync import plan_pool_sync
from gpupool.core.model.base import duration_seconds
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.constants import LABEL_DO_NOT_DISRUPT
from gpupool.core.model.instance import ManagedInstance
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import ApplyPool, DeleteClaim, MarkOfferingUnavailable, PatchPoolStatus
from tests.unit.decisions.builders import NOW, claim, gpu_node, node, pool, snapshot, worker

PROTECT = timedelta(minutes=5)


def test_interruption_marks_the_offering_and_the_claim_cordons_then_drains_once() -> None:
    plan = plan_interruption(
        claim(phase="Bound"),
        node("n1", claim_name="pool-a-1"),
        instance_id="i-1",
        reason="spot-interruption",
        now=NOW,
    )
    assert [a.kind for a in plan.now.actions] == [
        "mark-offering-unavailable",
        "mark-claim-interrupted",
        "record-event",
        "cordon-node",
    ]
    assert [a.kind for a in plan.drain.actions] == ["drain-node"], "after the replacement is launched"
    (mark,) = [a for a in plan.now.actions if isinstance(a, MarkOfferingUnavailable)]
    assert mark.until == NOW + timedelta(minutes=3), "Karpenter's UnavailableOfferingsTTL"
    again = plan_interruption(
        claim(phase="Bound", annotations={"gpupool.io/interrupted": "x"}),
        node("n1", claim_name="pool-a-1", unschedulable=True),
        instance_id="i-1",
        reason="spot-interruption",
        now=NOW,
    )
    assert (again.now.actions, [a.kind for a in again.drain.actions]) == ((), ["drain-node"])
    nobody = plan_interruption(None, None, instance_id="i-x", reason="spot-interruption", now=NOW)
    assert nobody.now.actions == () and nobody.drain.actions == ()
    failed = plan_interruption(
        claim(phase="Failed"),
        node("n1", claim_name="pool-a-1"),
        instance_id="i-1",
        reason="instance-shutting-down",
        now=NOW,
    )
    assert failed.now.actions == () and failed.drain.actions == (), "our own termination is no interruption"
    stopped = plan_interruption(
        claim(phase="Bound"),
        node("n1", claim_name="pool-a-1"),
        instance_id="i-1",
        reason="instance-stopping",
        now=NOW,
    )
    assert "mark-offering-unavailable" not in [a.kind for a in stopped.now.actions], "no capacity signal"


def test_orphan_sweep_only_old_tagged_instances_of_this_cluster_without_claim() -> None:
    def inst(instance_id: str, claim_name: str | None, age: int, cluster: str = "demo") -> ManagedInstance:
        return ManagedInstance(
            instance_id=instance_id,
            state="running",
            claim_name=claim_name,
            cluster=cluster,
            launch_time=NOW - timedelta(minutes=age),
            tags={"managed-by": "tensor-fusion.ai"},
        )

    instances = [
        inst("i-1", "kept", 60),
        inst("i-2", "gone", 60),
        inst("i-3", "gone", 1),
        inst("i-4", "gone", 60, cluster="other"),
        inst("i-5", None, 60),
    ]
    plan = plan_orphan_sweep(instances, {"kept"}, cluster="demo", now=NOW, grace=timedelta(minutes=10))
    assert [a.instance_id for a in plan.actions] == ["i-2", "i-5"]


def idle_snapshot(**overrides):  # type: ignore[no-untyped-def]
    claims = [claim(f"c{i}", phase="Bound", instance_id=f"i-{i}") for i in range(3)]
    nodes = [node(f"n{i}", claim_name=f"c{i}") for i in range(3)]
    gpus = [gpu_node(f"n{i}") for i in range(3)]
    return {"claims": claims, "nodes": nodes, "gpu_nodes": gpus, **overrides}


def test_compaction_guards() -> None:
    removed = lambda plan: [a.claim for a in plan.actions if isinstance(a, DeleteClaim)]  # noqa: E731
    parts = idle_snapshot()
    assert removed(
        plan_compaction(snapshot(pool(min_=("65", "16Gi")), **parts), now=NOW, protection=PROTECT)
    ) == ["c0", "c1"]
    assert removed(
        plan_compaction(snapshot(pool(min_=None, warm=("130", "32Gi")), **parts), now=NOW, protection=PROTECT)
    ) == ["c0"]
    young = idle_snapshot(
        nodes=[node(f"n{i}", claim_name=f"c{i}", age=timedelta(minutes=4)) for i in range(3)]
    )
    assert removed(plan_compaction(snapshot(pool(min_=None), **young), now=NOW, protection=PROTECT)) == []
    protected = idle_snapshot(
        nodes=[
            node("n0", claim_name="c0", labels={LABEL_DO_NOT_DISRUPT: "true"}),
            node("n1", claim_name="c1"),
            node("n2", claim_name="c2"),
        ],
        gpu_nodes=[gpu_node("n0"), gpu_node("n1", labels={LABEL_DO_NOT_DISRUPT: "true"}), gpu_node("n2")],
    )
    assert removed(plan_compaction(snapshot(pool(min_=None), **protected), now=NOW, protection=PROTECT)) == [
        "c2"
    ]
    busy = idle_snapshot(worker_pods=[worker("w", "n0")])
    assert removed(plan_compaction(snapshot(pool(min_=None), **busy), now=NOW, protection=PROTECT)) == [
        "c1",
        "c2",
    ]
    pending = idle_snapshot(
        claims=[*idle_snapshot()["claims"], claim("c9", phase="Pending", instance_id=None)]
    )
    assert removed(plan_compaction(snapshot(pool(min_=None), **pending), now=NOW, protection=PROTECT)) == []


def test_compaction_due_follows_period_and_manual_annotation() -> None:
    last = {"lastCompactionTime": (NOW - timedelta(minutes=2)).isoformat()}
    assert compaction_due(snapshot(pool(status=last)), now=NOW, manual=False)[0] is False
    assert compaction_due(snapshot(pool(status=last)), now=NOW, manual=True)[0] is True
    newer = {"tensor-fusion.ai/manual-compaction": NOW.isoformat()}
    assert compaction_due(snapshot(pool(status=last, annotations=newer)), now=NOW, manual=False)[0] is True
    assert (
        compaction_due(snapshot(pool(status=last)), now=NOW + timedelta(minutes=3), manual=False)[0] is True
    )


def test_pool_status_written_only_when_it_changes() -> None:
    parts = idle_snapshot()
    first = plan_pool_status(snapshot(pool(min_=("65", "16Gi")), **parts), now=NOW)
    (patch,) = first.actions
    assert isinstance(patch, PatchPoolStatus)
    assert patch.status.phase == "Running" and patch.status.total_nodes == 3
    updated = pool(min_=("65", "16Gi")).model_copy(update={"status": patch.status})
    assert plan_pool_status(snapshot(updated, **parts), now=NOW).actions == ()


def test_pool_sync_creates_and_updates_cluster_pools() -> None:
    template = pool().spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    cluster = TensorFusionCluster.model_validate(
        {"metadata": {"name": "tf"}, "spec": {"gpuPools": [{"name": "a", "specTemplate": template}]}}
    )
    (create,) = plan_pool_sync([cluster], []).actions
    assert isinstance(create, ApplyPool) and create.create and create.desired.name == "tf-a"
    assert plan_pool_sync([cluster], [create.desired]).actions == ()
    drifted = create.desired.model_copy(update={"spec": pool(min_=("1", "1Gi")).spec})
    (update,) = plan_pool_sync([cluster], [drifted]).actions
    assert isinstance(update, ApplyPool) and not update.create and update.desired.spec == create.desired.spec


def test_nodes_whose_claim_is_gone_are_labelled_orphan_and_cleared_when_it_returns() -> None:
    nodes = [
        node("n1", claim_name="gone"),
        node("n2", claim_name="kept"),
        node("n3", claim_name="kept", labels={"tensor-fusion.ai/orphan": "true"}),
        node("n4", claim_name=None),
    ]
    plan = plan_orphan_nodes(nodes, {"kept"})
    assert [(a.node, a.labels) for a in plan.actions] == [  # type: ignore[union-attr]
        ("n1", {"tensor-fusion.ai/orphan": "true"}),
        ("n3", {"tensor-fusion.ai/orphan": None}),
    ]


@pytest.mark.parametrize("period", ["5 minutes", "5", "-1m", "1w", ""])
def test_an_unreadable_compaction_period_is_a_validation_error_not_a_silent_minute(period: str) -> None:
    raw = pool().model_dump(by_alias=True, exclude_none=True, mode="json")
    raw["spec"]["nodeManagerConfig"]["nodeCompaction"] = {"period": period}
    with pytest.raises(ValidationError, match="not a duration"):
        GPUPool.model_validate(raw)
    with pytest.raises(ValueError, match="not a duration"):
        duration_seconds(period)


@pytest.mark.parametrize(
    ("period", "expected"), [("90s", 90), ("1h30m", 5400), ("0", 60), ("0s", 60), ("1d", 86400)]
)
def test_compaction_period_reads_go_durations_whole_days_and_zero_means_a_minute(
    period: str, expected: int
) -> None:
    raw = pool().model_dump(by_alias=True, exclude_none=True, mode="json")
    raw["spec"]["nodeManagerConfig"]["nodeCompaction"] = {"period": period}
    assert compaction_period(snapshot(GPUPool.model_validate(raw))) == timedelta(seconds=expected)
