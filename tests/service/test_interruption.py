"""Interruptions as Karpenter handles them, through the launch service: a Spot warning (or an ECS
preemption) marks the claim's offering unavailable for 3 minutes, marks and cordons the claim,
launches the replacement in the same invocation on another offering, and only then drains the
node through the eviction API (PDBs honoured, DaemonSet pods left); a Karpenter-mode claim's
NodeClaim is deleted; an AutoSelect expansion is left to Karpenter; a rebalance recommendation
is an Event only unless the pool opts in; an instance stopping on its own is bind's.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from gpupool.core.intake.causes import InstanceInterruption, InstanceStateChanged, Reconcile, Sweep
from gpupool.core.model.base import ObjectMeta, OwnerReference
from gpupool.core.model.claim_state import ANNOTATION_INTERRUPTED
from gpupool.core.model.foreign import Pod, PodSpec
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.unavailable import ANNOTATION_UNAVAILABLE_OFFERINGS
from gpupool.service.bind import handle_bind
from gpupool.service.launch import handle_launch
from tests.service.fakes import World, make_pool
from tests.service.test_karpenter_mode import KarpenterWorld, karpenter_pool


def bound_world(pool: GPUPool | None = None) -> tuple[World, str, str, str]:
    world = World(pool or make_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(Reconcile(trigger="schedule", event_id="e0"), world.deps)
    (claim,) = world.claims()
    node = world.cluster.join_node(claim.name)
    handle_bind(Sweep(event_id="s0"), world.deps)
    assert world.claim(claim.name).status.phase == "Bound"  # type: ignore[union-attr]
    return world, claim.name, node, claim.status.instance_id  # type: ignore[union-attr,return-value]


def warn(world: World, instance_id: str, reason: str = "spot-interruption", event_id: str = "spot-1") -> Any:
    cause = InstanceInterruption(instance_id=instance_id, reason=reason, event_id=event_id)  # type: ignore[arg-type]
    return handle_launch(cause, world.deps)


def unavailable(world: World) -> dict[str, str]:
    text = world.pool().metadata.annotations.get(ANNOTATION_UNAVAILABLE_OFFERINGS) or "{}"
    return dict(json.loads(text))


def test_spot_interruption_cordons_drains_marks_and_replacement_follows() -> None:
    world, claim, node, instance_id = bound_world()
    interrupted_offering = world.claim(claim).spec.instance_type
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
    live_at_eviction: list[int] = []
    evict = world.cluster.evict_pod

    def counting_evict(namespace: str, name: str) -> None:
        live_at_eviction.append(len(world.compute.live()))
        evict(namespace, name)

    world.cluster.evict_pod = counting_evict  # type: ignore[method-assign]
    outcome = warn(world, instance_id)
    assert outcome.errors == []
    assert world.cluster.get("Node", node).spec.unschedulable is True
    assert sorted(world.cluster.evicted) == ["default/web-1", "default/worker-1"]
    assert world.cluster.get("Pod", "agent-1") is not None, "DaemonSet pods stay"
    marked = world.claim(claim)
    assert marked.metadata.annotations[ANNOTATION_INTERRUPTED].startswith("spot-interruption ")
    assert world.cluster.events_with("NodeInterrupted")
    replacements = [c for c in world.claims() if c.name != claim]
    assert len(replacements) == 1 and len(world.compute.live()) == 2, "replaced in the same invocation"
    assert set(live_at_eviction) == {2}, "the replacement was launched before the drain began"
    (replacement,) = replacements
    key = f"{interrupted_offering}/us-east-1a/OnDemand"
    assert list(unavailable(world)) == [key], "the interrupted offering, for 3 minutes"
    assert f"{replacement.spec.instance_type}/{replacement.spec.zone}/OnDemand" != key, "another offering"
    handle_launch(Reconcile(trigger="schedule", event_id="e2"), world.deps)
    assert len(world.claims()) == 2, "the tick after has nothing left to replace"


def test_the_same_warning_twice_marks_once_and_never_launches_twice() -> None:
    world, _claim, _node, instance_id = bound_world()
    for event_id in ("spot-1", "spot-1"):
        warn(world, instance_id, event_id=event_id)
    assert len(world.cluster.events_with("NodeInterrupted")) == 1
    for event_id in ("e1", "e2", "e3"):
        handle_launch(Reconcile(trigger="schedule", event_id=event_id), world.deps)
    assert len(world.claims()) == 2


def test_eviction_blocked_by_a_disruption_budget_is_retried_later() -> None:
    world, _claim, node, instance_id = bound_world()
    world.cluster.add_pod("db-0", node)
    world.cluster.pdb_blocked.add("default/db-0")
    outcome = warn(world, instance_id, event_id="r1")
    assert outcome.retryable
    assert world.cluster.get("Pod", "db-0") is not None
    assert len(world.compute.live()) == 2, "the blocked drain does not hold the replacement back"
    world.cluster.pdb_blocked.clear()
    warn(world, instance_id, event_id="r1")
    assert world.cluster.get("Pod", "db-0") is None
    assert len(world.compute.live()) == 2, "the retry launches nothing more"


def test_a_preemptible_interruption_is_handled_like_a_spot_warning() -> None:
    world, _claim, _node, instance_id = bound_world()
    assert warn(world, instance_id, reason="preemptible-interruption").errors == []
    assert len(world.compute.live()) == 2 and unavailable(world)


def test_a_rebalance_recommendation_is_an_event_only_unless_the_pool_opts_in() -> None:
    world, claim, node, instance_id = bound_world()
    before = world.claim(claim).metadata.resource_version
    assert warn(world, instance_id, reason="rebalance-recommendation").errors == []
    assert world.claim(claim).metadata.resource_version == before
    assert world.cluster.get("Node", node).spec.unschedulable is False and len(world.compute.live()) == 1
    (event,) = world.cluster.events_with("RebalanceRecommendation")
    assert event["type"] == "Normal" and "gpupool.io/rebalance-recommendation=replace" in str(
        event["message"]
    )

    opted = make_pool(min_tflops="65", min_vram="16Gi")
    opted = opted.model_copy(
        update={
            "metadata": opted.metadata.model_copy(
                update={"annotations": {"gpupool.io/rebalance-recommendation": "replace"}}
            )
        }
    )
    world, claim, node, instance_id = bound_world(opted)
    assert warn(world, instance_id, reason="rebalance-recommendation").errors == []
    assert world.cluster.get("Node", node).spec.unschedulable is True and len(world.compute.live()) == 2


def test_a_karpenter_mode_interruption_deletes_the_nodeclaim_and_replaces_it_now() -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(Reconcile(trigger="schedule", event_id="e0"), world.deps)
    (claim,) = world.claims()
    world.karpenter.launched(claim.name, f"aws:///us-east-1a/i-{claim.name}")
    world.karpenter.register(world, claim.name)
    handle_bind(Sweep(event_id="s0"), world.deps)
    outcome = handle_launch(
        InstanceInterruption(instance_id=f"i-{claim.name}", reason="spot-interruption", event_id="spot"),
        world.deps,
    )
    assert outcome.errors == []
    assert claim.name not in [n.name for n in world.karpenter.live()], "deleted, as Karpenter does"
    (replacement,) = [c for c in world.claims() if c.name != claim.name]
    assert replacement.name in world.karpenter.nodeclaims, "its NodeClaim made in the same invocation"
    assert f"{claim.spec.instance_type}/{claim.spec.zone}/{claim.spec.capacity_type}" in unavailable(world)


def test_an_autoselect_expansions_interruption_is_left_to_karpenter() -> None:
    world = KarpenterWorld(make_pool(mode="AutoSelect", min_tflops=None, min_vram=None))
    expansion = KarpenterNodeClaim.model_validate(
        {
            "metadata": {"name": "gpu-abc", "labels": {"karpenter.sh/nodepool": "gpu"}},
            "status": {"providerID": "aws:///us-east-1a/i-0abc"},
        }
    )
    world.karpenter.nodeclaims[expansion.name] = expansion
    outcome = handle_launch(
        InstanceInterruption(instance_id="i-0abc", reason="spot-interruption", event_id="spot"), world.deps
    )
    assert outcome.errors == [] and world.karpenter.count("delete_nodeclaim") == 0
    assert any("left to Karpenter's own interruption handling" in r for r in outcome.plan.reasons)


def test_instance_terminated_under_a_bound_claim_fails_it_and_launch_refills() -> None:
    world, claim, node, instance_id = bound_world()
    world.compute.set_state(instance_id, "terminated")
    handle_bind(InstanceStateChanged(instance_id=instance_id, state="terminated", event_id="x1"), world.deps)
    failed = world.claim(claim)
    assert failed.status is not None and failed.status.phase == "Failed"
    assert world.cluster.get("Node", node).spec.unschedulable is True
    assert unavailable(world) == {}, "an instance ending on its own says nothing about capacity"
    handle_launch(Reconcile(trigger="schedule", event_id="e3"), world.deps)
    assert len(world.claims(live_only=True)) == 1 and len(world.compute.live()) == 1


def test_interruption_of_an_unknown_instance_changes_nothing() -> None:
    world, claim, node, _ = bound_world()
    before = world.claim(claim).metadata.resource_version
    outcome = warn(world, "i-unknown", event_id="u1")
    assert outcome.errors == []
    assert world.claim(claim).metadata.resource_version == before
    assert world.cluster.get("Node", node).spec.unschedulable is False


@pytest.mark.parametrize("function", ["bind", "compact"])
def test_a_warning_delivered_to_another_function_is_ignored_with_the_reason(function: str) -> None:
    from gpupool.core.intake.routing import route

    cause = InstanceInterruption(instance_id="i-1", reason="spot-interruption", event_id="x")
    routed = route(function, cause)  # type: ignore[arg-type]
    assert routed.kind == "ignored" and "handled by the launch function" in routed.reason  # type: ignore[union-attr]


def test_a_busy_pool_lease_is_waited_for_then_the_replacement_is_launched() -> None:
    world, _claim, _node, instance_id = bound_world()
    holder = "someone-else"
    assert world.cluster.try_acquire_lease(
        "gpupool-pool-pool-a", holder=holder, now=world.clock.now(), duration=timedelta(seconds=3)
    )
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        world.clock.advance(timedelta(seconds=seconds))

    from dataclasses import replace

    deps = replace(world.deps, sleep=sleep)
    cause = InstanceInterruption(instance_id=instance_id, reason="spot-interruption", event_id="spot")
    assert handle_launch(cause, deps).errors == []
    assert slept and len(world.compute.live()) == 2


def _impostor(world: World, instance_id: str) -> str:
    """Issue 33, attempt 1: an instance someone started with copies of a managed instance's tags."""
    real = world.compute.instances[instance_id]
    copy_id = "i-0impostor0000000"
    world.compute.instances[copy_id] = real.model_copy(update={"instance_id": copy_id, "client_token": None})
    return copy_id


def test_a_stopping_instance_with_copied_tags_does_not_touch_the_claim_it_names() -> None:
    world, claim, node, instance_id = bound_world()
    impostor = _impostor(world, instance_id)
    world.compute.set_state(impostor, "stopping")
    before = world.claim(claim).metadata.resource_version
    handle_bind(InstanceStateChanged(instance_id=impostor, state="stopping", event_id="x-imp"), world.deps)
    assert ANNOTATION_INTERRUPTED not in world.claim(claim).metadata.annotations
    assert world.claim(claim).status.phase == "Bound"  # type: ignore[union-attr]
    assert world.cluster.get("Node", node).spec.unschedulable is False, "the healthy node is not drained"
    assert world.cluster.evicted == [] and world.claim(claim).metadata.resource_version == before


def test_a_spot_warning_for_an_instance_with_copied_tags_drains_nothing() -> None:
    world, claim, node, instance_id = bound_world()
    world.cluster.add_pod("worker-1", node, worker=True)
    impostor = _impostor(world, instance_id)
    outcome = warn(world, impostor, event_id="spot-imp")
    assert outcome.errors == []
    assert ANNOTATION_INTERRUPTED not in world.claim(claim).metadata.annotations
    assert world.cluster.get("Node", node).spec.unschedulable is False and world.cluster.evicted == []
    assert len(world.claims()) == 1, "nothing replaced"
    assert unavailable(world) == {}, "no offering marked unavailable"
