"""Drain waits, up to a deadline, until the evicted pods are gone before the instance goes.

A deleted claim's node is cordoned and drained before its instance is terminated. A pod that
takes 20 s to terminate after its eviction keeps the instance alive for those 20 s (the drain
polls, the fake clock advancing with each wait), then the instance is terminated and the claim
released. A pod that outlives the drain's deadline leaves the instance running and the claim
held, with a retryable error naming the pod; once the pod is gone, the next run finishes.
DaemonSet pods are never waited for.
"""

from __future__ import annotations

from datetime import timedelta

from gpupool.core.intake.causes import Sweep
from gpupool.core.model.base import ObjectMeta, OwnerReference
from gpupool.core.model.foreign import Pod, PodSpec
from gpupool.core.planning.plan import DrainNode
from gpupool.service.bind import handle_bind
from gpupool.service.drain import apply_drain
from gpupool.service.errors import Throttled
from tests.service.fakes import World
from tests.service.test_compact import world_with_nodes


def deleted_claim_with_pods(grace: timedelta) -> tuple[World, str, str]:
    """One Bound node running a web pod that terminates `grace` after its eviction and a
    DaemonSet pod; its claim is then deleted (the finalizer keeps it)."""
    world, (node,) = world_with_nodes(1)
    (claim,) = world.claims()
    world.cluster.add_pod("web-1", node)
    daemon = Pod(
        metadata=ObjectMeta(
            name="agent-1",
            namespace="default",
            owner_references=[
                OwnerReference(api_version="apps/v1", kind="DaemonSet", name="agent", uid="u1")
            ],
        ),
        spec=PodSpec(node_name=node),
    )
    world.cluster.add(daemon)
    world.cluster.termination_grace["web-1"] = grace
    world.cluster.delete_claim(claim.name)
    return world, claim.name, node


def _terminated(world: World) -> list[str]:
    return [i.instance_id for i in world.compute.instances.values() if i.gone]


def test_the_instance_is_terminated_only_once_the_slow_pod_is_gone() -> None:
    world, claim, node = deleted_claim_with_pods(timedelta(seconds=20))
    seen: list[list[str]] = []
    real_terminate = world.compute.terminate

    def terminate(instance_id: str) -> None:
        seen.append(sorted(p.name for p in world.cluster.list_pods(node_name=node)))
        real_terminate(instance_id)

    world.compute.terminate = terminate  # type: ignore[method-assign]
    started = world.clock.now()
    outcome = handle_bind(Sweep(event_id="s1"), world.deps)
    assert outcome.errors == []
    assert seen == [["agent-1"]]  # terminated after web-1 was gone; the DaemonSet pod stays
    assert world.clock.now() - started >= timedelta(seconds=20)
    assert world.cluster.evicted == ["default/web-1"] and len(_terminated(world)) == 1
    assert claim not in [c.name for c in world.claims()]  # finalizer released, claim gone


def test_a_pod_outliving_the_deadline_keeps_the_instance_until_the_next_run() -> None:
    world, claim, _ = deleted_claim_with_pods(timedelta(minutes=5))
    first = handle_bind(Sweep(event_id="s1"), world.deps)
    assert any("still terminating" in e and "default/web-1" in e for e in first.errors), first.errors
    assert first.retryable
    assert _terminated(world) == [] and claim in [c.name for c in world.claims()]
    world.clock.advance(timedelta(minutes=5))
    second = handle_bind(Sweep(event_id="s2"), world.deps)
    assert second.errors == [] and len(_terminated(world)) == 1
    assert claim not in [c.name for c in world.claims()]


def test_a_drain_never_waits_past_its_deadline() -> None:
    world, _, node = deleted_claim_with_pods(timedelta(hours=1))
    started = world.clock.now()
    try:
        apply_drain(world.deps, DrainNode(node=node))
    except Throttled as error:
        assert "1 pod(s) still terminating after 0:01:00" in error.message
    else:
        raise AssertionError("a drain past its deadline must fail")
    waited = world.clock.now() - started
    assert (
        world.deps.settings.drain_timeout <= waited < world.deps.settings.drain_timeout + timedelta(seconds=3)
    )
