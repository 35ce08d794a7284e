"""Bind service against fakes: claims become Bound when their node is ready, time out and
terminate when it never joins (and the gap is refilled), release only after their instance
is gone when deleted, and tagged orphans are swept after the grace period (never untagged).
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from gpupool.core.intake.causes import ClaimDeleted, NodeChanged, Reconcile, Sweep
from gpupool.core.model.instance import ManagedInstance
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.service.bind import handle_bind
from gpupool.service.launch import handle_launch
from tests.service.fakes import World, make_pool


def launch(world: World, event_id: str = "evt") -> None:
    assert handle_launch(Reconcile(trigger="schedule", event_id=event_id), world.deps).errors == []


def sweep(world: World, event_id: str = "sweep") -> None:
    assert handle_bind(Sweep(event_id=event_id), world.deps).errors == []


def one_claim_world() -> World:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    launch(world)
    return world


def only_claim(world: World) -> GPUNodeClaim:
    (claim,) = world.claims()
    return claim


def test_claim_is_bound_when_its_node_joins_and_is_ready() -> None:
    world = one_claim_world()
    claim = only_claim(world)
    node = world.cluster.join_node(claim.name, ready=False)
    handle_bind(NodeChanged(node=node, change="joined", event_id="n1"), world.deps)
    assert only_claim(world).status.phase == "Creating"  # type: ignore[union-attr]
    world.cluster.join_node(claim.name, ready=True)
    handle_bind(NodeChanged(node=node, change="ready", event_id="n2"), world.deps)
    bound = only_claim(world)
    assert bound.status is not None and bound.status.phase == "Bound"
    assert bound.status.instance_id == claim.status.instance_id  # type: ignore[union-attr]
    assert world.cluster.events_with("ManagedNodeCreated")


def test_node_that_never_joins_is_terminated_after_registration_timeout_and_replaced() -> None:
    world = one_claim_world()
    claim = only_claim(world)
    instance_id = claim.status.instance_id  # type: ignore[union-attr]
    world.clock.advance(timedelta(minutes=14))
    sweep(world, "early")
    assert only_claim(world).status.phase == "Creating"  # type: ignore[union-attr]
    assert world.compute.instances[instance_id].state == "pending"
    world.clock.advance(timedelta(minutes=2))
    sweep(world, "late")
    failed = only_claim(world)
    assert failed.status is not None and failed.status.phase == "Failed"
    assert failed.status.reason == "RegistrationTimeout"
    assert world.compute.instances[instance_id].state == "terminated"
    assert world.cluster.events_with("NodeLaunchFailed")
    launch(world, "refill")
    replacement = world.claims(live_only=True)
    assert len(replacement) == 1 and replacement[0].name != claim.name
    assert len(world.compute.live()) == 1


def test_pending_claim_past_launch_timeout_fails_and_its_late_instance_is_terminated() -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    world.cluster.crash_after("create_claim", RuntimeError("function died"))
    with contextlib.suppress(RuntimeError):
        launch(world)
    world.clock.advance(timedelta(minutes=6))
    sweep(world)
    claim = only_claim(world)
    assert claim.status is not None and claim.status.phase == "Failed"
    assert claim.status.reason == "LaunchTimeout"
    assert world.compute.instances == {}


def test_bind_adopts_an_instance_found_by_tag_for_a_pending_claim() -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    world.compute.crash_after("launch", RuntimeError("died before recording the instance"))
    with contextlib.suppress(RuntimeError):
        launch(world)
    sweep(world)
    claim = only_claim(world)
    (instance,) = world.compute.instances.values()
    assert claim.status is not None and claim.status.phase == "Creating"
    assert claim.status.instance_id == instance.instance_id


def test_deleting_a_claim_terminates_its_instance_then_releases_it() -> None:
    world = one_claim_world()
    claim = only_claim(world)
    instance_id = claim.status.instance_id  # type: ignore[union-attr]
    world.cluster.delete_claim(claim.name)
    assert world.claim(claim.name) is not None, "the finalizer holds it"
    world.compute.fail_next(
        "terminate", __import__("gpupool.service.errors").service.errors.Throttled("slow down")
    )
    outcome = handle_bind(ClaimDeleted(claim=claim.name, event_id="d1"), world.deps)
    assert outcome.retryable
    assert world.claim(claim.name) is not None, "not released while the instance may still run"
    handle_bind(ClaimDeleted(claim=claim.name, event_id="d1"), world.deps)
    assert world.compute.instances[instance_id].state == "terminated"
    assert world.claim(claim.name) is None


def test_deleting_a_bound_claim_terminates_its_instance_too() -> None:
    world = one_claim_world()
    claim = only_claim(world)
    world.cluster.join_node(claim.name)
    sweep(world)
    world.cluster.delete_claim(claim.name)
    handle_bind(ClaimDeleted(claim=claim.name, event_id="d2"), world.deps)
    assert world.compute.live() == []
    assert world.claim(claim.name) is None


def test_orphan_sweep_terminates_tagged_instances_without_claim_after_grace_never_untagged() -> None:
    world = one_claim_world()
    claim = only_claim(world)
    orphan = ManagedInstance(
        instance_id="i-orphan",
        state="running",
        claim_name="pool-a-gone",
        cluster="demo",
        launch_time=world.clock.now(),
        tags={"managed-by": "tensor-fusion.ai", "tensor-fusion.ai/node-name": "pool-a-gone"},
    )
    other_cluster = orphan.model_copy(update={"instance_id": "i-other", "cluster": "elsewhere"})
    world.compute.instances.update({"i-orphan": orphan, "i-other": other_cluster})
    world.compute.untagged["i-untagged"] = orphan.model_copy(update={"instance_id": "i-untagged", "tags": {}})
    sweep(world, "early")
    assert world.compute.instances["i-orphan"].state == "running", "within the grace period"
    world.clock.advance(timedelta(minutes=11))
    world.cluster.join_node(claim.name)
    sweep(world, "late")
    assert world.compute.instances["i-orphan"].state == "terminated"
    assert world.compute.instances["i-other"].state == "running"
    assert world.compute.untagged["i-untagged"].state == "running"
    assert world.compute.instances[claim.status.instance_id].state == "pending"  # type: ignore[union-attr]
    terminated = [args[0] for name, args in world.compute.calls if name == "terminate"]
    assert terminated == ["i-orphan"]


def test_failed_claims_are_deleted_after_retention() -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    world.compute.no_capacity.update(
        {"g4dn.xlarge/us-east-1a/OnDemand", "g6.xlarge/us-east-1a/OnDemand", "g5.xlarge/us-east-1a/OnDemand"}
    )
    launch(world)
    assert world.claims()
    world.clock.advance(timedelta(minutes=11))
    sweep(world)
    sweep(world, "again")
    assert world.claims() == []


def test_an_unknown_claim_deletion_changes_nothing() -> None:
    world = one_claim_world()
    before = [c.metadata.resource_version for c in world.claims()]
    outcome = handle_bind(ClaimDeleted(claim="nope", event_id="d3"), world.deps)
    assert outcome.errors == []
    assert [c.metadata.resource_version for c in world.claims()] == before


def test_binding_brings_the_pool_status_up_to_date() -> None:
    world = one_claim_world()
    claim = only_claim(world)
    world.cluster.join_node(claim.name)
    handle_bind(NodeChanged(node=f"node-{claim.name}", change="ready", event_id="n1"), world.deps)
    status = world.pool().status
    assert status is not None and (status.phase, status.ready_nodes, status.provisioning_phase) == (
        "Running",
        1,
        "Completed",
    )


def test_ignored_and_foreign_causes_change_nothing_in_any_entry_point() -> None:
    from gpupool.core.intake.causes import Compact, Ignored
    from gpupool.service.compact import handle_compact

    world = one_claim_world()
    calls_before = len(world.cluster.calls) + len(world.compute.calls)
    causes = [Ignored(reason="unknown detail-type", event_id="x"), Compact(event_id="c"), Sweep(event_id="s")]
    outcomes = [
        handle_launch(causes[0], world.deps),
        handle_bind(causes[0], world.deps),
        handle_compact(causes[0], world.deps),
        handle_launch(causes[1], world.deps),
        handle_bind(causes[1], world.deps),
        handle_compact(causes[2], world.deps),
    ]
    assert len(world.cluster.calls) + len(world.compute.calls) == calls_before
    assert all(o.errors == [] and o.plan.actions == () and o.plan.reasons for o in outcomes)
    assert outcomes[0].to_json()["plan"]["reasons"] == ["ignored: unknown detail-type"]


def test_a_launch_and_a_termination_are_events_on_the_claim() -> None:
    """`kubectl describe gpunodeclaim` shows what was done to the claim's instance, and why."""
    world = one_claim_world()
    claim = only_claim(world)
    instance_id = claim.status.instance_id  # type: ignore[union-attr]
    (launched,) = [e for e in world.cluster.events_with("InstanceLaunched") if e["name"] == claim.name]
    assert launched["kind"] == "GPUNodeClaim" and launched["type"] == "Normal"
    assert launched["message"].startswith(f"instance {instance_id} launched (g4dn.xlarge ")
    world.cluster.delete_claim(claim.name)
    handle_bind(ClaimDeleted(claim=claim.name, event_id="d1"), world.deps)
    (terminated,) = world.cluster.events_with("InstanceTerminated")
    assert terminated["name"] == claim.name
    assert terminated["message"] == f"instance {instance_id} terminated (ClaimDeleted)"
