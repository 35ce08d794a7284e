"""Interruption through the bind service: a spot interruption warning (or an unexpected stop)
cordons and drains the node through the eviction API (PDBs honoured, DaemonSet pods left),
marks the claim, and the next launch decision plans the replacement.
"""

from __future__ import annotations

from gpupool.core.intake.causes import InstanceInterruption, InstanceStateChanged, Reconcile, Sweep
from gpupool.core.model.base import ObjectMeta, OwnerReference
from gpupool.core.model.claim_state import ANNOTATION_INTERRUPTED
from gpupool.core.model.foreign import Pod, PodSpec
from gpupool.service.bind import handle_bind
from gpupool.service.launch import handle_launch
from tests.service.fakes import World, make_pool


def bound_world() -> tuple[World, str, str, str]:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(Reconcile(trigger="schedule", event_id="e0"), world.deps)
    (claim,) = world.claims()
    node = world.cluster.join_node(claim.name)
    handle_bind(Sweep(event_id="s0"), world.deps)
    assert world.claim(claim.name).status.phase == "Bound"  # type: ignore[union-attr]
    return world, claim.name, node, claim.status.instance_id  # type: ignore[union-attr,return-value]


def test_spot_interruption_cordons_drains_marks_and_replacement_follows() -> None:
    world, claim, node, instance_id = bound_world()
    world.cluster.add_pod("worker-1", node, worker=True)
    world.cluster.add_pod("web-1", node)
    daemon = Pod(
        metadata=ObjectMeta(
            name="agent-1",
            namespace="kube-system",
            owner_references=[OwnerReference(api_version="apps/v1", kind="DaemonSet", name="agent")],
        ),
        spec=PodSpec(node_name=node),
    )
    world.cluster.add(daemon)
    outcome = handle_bind(
        InstanceInterruption(instance_id=instance_id, reason="spot-interruption", event_id="spot-1"),
        world.deps,
    )
    assert outcome.errors == []
    assert world.cluster.get("Node", node).spec.unschedulable is True
    assert sorted(world.cluster.evicted) == ["default/web-1", "default/worker-1"]
    assert world.cluster.get("Pod", "agent-1") is not None, "DaemonSet pods stay"
    marked = world.claim(claim)
    assert marked.metadata.annotations[ANNOTATION_INTERRUPTED].startswith("spot-interruption ")
    assert world.cluster.events_with("NodeInterrupted")
    plan = handle_launch(Reconcile(trigger="schedule", event_id="e1"), world.deps, dry_run=True).to_json()
    assert [a["kind"] for a in plan["plan"]["actions"]].count("create-claim") == 1
    handle_launch(Reconcile(trigger="schedule", event_id="e2"), world.deps)
    replacements = [c for c in world.claims() if c.name != claim]
    assert len(replacements) == 1 and len(world.compute.live()) == 2


def test_the_same_warning_twice_marks_once_and_never_launches_twice() -> None:
    world, _claim, _node, instance_id = bound_world()
    for event_id in ("spot-1", "spot-1"):
        handle_bind(
            InstanceInterruption(instance_id=instance_id, reason="spot-interruption", event_id=event_id),
            world.deps,
        )
    assert len(world.cluster.events_with("NodeInterrupted")) == 1
    for event_id in ("e1", "e2", "e3"):
        handle_launch(Reconcile(trigger="schedule", event_id=event_id), world.deps)
    assert len(world.claims()) == 2


def test_eviction_blocked_by_a_disruption_budget_is_retried_later() -> None:
    world, _claim, node, instance_id = bound_world()
    world.cluster.add_pod("db-0", node)
    world.cluster.pdb_blocked.add("default/db-0")
    outcome = handle_bind(
        InstanceInterruption(instance_id=instance_id, reason="rebalance-recommendation", event_id="r1"),
        world.deps,
    )
    assert outcome.retryable
    assert world.cluster.get("Pod", "db-0") is not None
    world.cluster.pdb_blocked.clear()
    handle_bind(
        InstanceInterruption(instance_id=instance_id, reason="rebalance-recommendation", event_id="r1"),
        world.deps,
    )
    assert world.cluster.get("Pod", "db-0") is None


def test_instance_terminated_under_a_bound_claim_fails_it_and_launch_refills() -> None:
    world, claim, node, instance_id = bound_world()
    world.compute.set_state(instance_id, "terminated")
    handle_bind(InstanceStateChanged(instance_id=instance_id, state="terminated", event_id="x1"), world.deps)
    failed = world.claim(claim)
    assert failed.status is not None and failed.status.phase == "Failed"
    assert world.cluster.get("Node", node).spec.unschedulable is True
    handle_launch(Reconcile(trigger="schedule", event_id="e3"), world.deps)
    assert len(world.claims(live_only=True)) == 1 and len(world.compute.live()) == 1


def test_interruption_of_an_unknown_instance_changes_nothing() -> None:
    world, claim, node, _ = bound_world()
    before = world.claim(claim).metadata.resource_version
    outcome = handle_bind(
        InstanceInterruption(instance_id="i-unknown", reason="spot-interruption", event_id="u1"), world.deps
    )
    assert outcome.errors == []
    assert world.claim(claim).metadata.resource_version == before
    assert world.cluster.get("Node", node).spec.unschedulable is False
