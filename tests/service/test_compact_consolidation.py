"""Compaction's WhenUnderutilized policy against fakes: two half-used nodes become one (cordon,
drain through the eviction API, claim deleted, an Event); WhenEmpty leaves them; a dry run plans
the drain and applies nothing; an eviction a PodDisruptionBudget refuses keeps the claim (the
instance is not terminated under a pod that could not leave) and makes the node schedulable again."""

from __future__ import annotations

from datetime import timedelta

from gpupool.core.intake.causes import Compact
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import (
    ANNOTATION_GPU_IDS,
    ANNOTATION_GPU_POOL,
    ANNOTATION_TFLOPS_REQUEST,
    ANNOTATION_VRAM_REQUEST,
    LABEL_COMPONENT,
    LABEL_ENABLED,
    LABEL_GPU_POOL,
)
from gpupool.core.model.foreign import Pod, PodDisruptionBudget, PodSpec, PodStatus
from gpupool.core.model.node import GPU, GPUStatus, ObservedResource
from gpupool.core.model.pool import GPUPool
from gpupool.core.quantity import Quantity
from gpupool.service.compact import handle_compact
from tests.service.fakes import World
from tests.service.test_compact import set_pool, world_with_nodes


def _half_used(world: World, nodes: list[str]) -> None:
    """Each node: one GPU object half allocated and one worker holding that half."""
    for node in nodes:
        gpu = f"{node}-gpu0"
        world.cluster.add(
            GPU(
                metadata=ObjectMeta(name=gpu, labels={LABEL_GPU_POOL: "pool-a"}),
                status=GPUStatus(
                    phase="Running",
                    capacity=ObservedResource(tflops=Quantity.parse("65"), vram=Quantity.parse("16Gi")),
                    available=ObservedResource(tflops=Quantity.parse("32.5"), vram=Quantity.parse("8Gi")),
                    node_selector={"kubernetes.io/hostname": node},
                ),
            ),
            Pod(
                metadata=ObjectMeta(
                    name=f"w-{node}",
                    namespace="default",
                    labels={LABEL_ENABLED: "true", LABEL_COMPONENT: "worker"},
                    annotations={
                        ANNOTATION_TFLOPS_REQUEST: "32.5",
                        ANNOTATION_VRAM_REQUEST: "8Gi",
                        ANNOTATION_GPU_IDS: gpu,
                        ANNOTATION_GPU_POOL: "pool-a",
                    },
                ),
                spec=PodSpec(node_name=node),
                status=PodStatus(phase="Running"),
            ),
        )
        gpu_node = world.cluster.objects["GPUNode"][node]
        status = gpu_node.status.model_copy(
            update={"available_tflops": Quantity.parse("32.5"), "available_vram": Quantity.parse("8Gi")}
        )
        world.cluster.objects["GPUNode"][node] = gpu_node.model_copy(update={"status": status})


def _world(policy: str) -> tuple[World, list[str]]:
    world, nodes = world_with_nodes(2, min_tflops=None, min_vram=None)
    _half_used(world, nodes)
    data = world.pool().model_dump(by_alias=True, mode="json", exclude_none=True)
    data["spec"]["nodeManagerConfig"]["nodeCompaction"] = {"policy": policy, "budgets": [{"nodes": "1"}]}
    set_pool(world, GPUPool.model_validate(data))
    world.clock.advance(timedelta(minutes=6))
    return world, nodes


def _deleting(world: World) -> list[str]:
    return sorted(c.name for c in world.claims() if c.metadata.deletion_timestamp is not None)


def test_two_half_used_nodes_become_one() -> None:
    world, nodes = _world("WhenUnderutilized")
    outcome = handle_compact(Compact(pool="pool-a", event_id="c1"), world.deps)
    assert outcome.errors == []
    assert len(_deleting(world)) == 1
    drained = next(n for n in nodes if world.cluster.objects["Node"][n].spec.unschedulable)
    assert world.cluster.evicted == [f"default/w-{drained}"]
    events = world.cluster.events_with("Compaction")
    assert any("fit the free GPUs of" in (e["message"] or "") for e in events)
    # The next run keeps the other: nothing is left to move it onto.
    handle_compact(Compact(pool="pool-a", manual=True, event_id="c2"), world.deps)
    assert len(_deleting(world)) == 1


def test_when_empty_keeps_half_used_nodes() -> None:
    world, _ = _world("WhenEmpty")
    handle_compact(Compact(pool="pool-a", event_id="c1"), world.deps)
    assert _deleting(world) == [] and world.cluster.evicted == []


def test_dry_run_plans_the_drain_and_applies_nothing() -> None:
    world, _ = _world("WhenUnderutilized")
    outcome = handle_compact(Compact(pool="pool-a", event_id="c1"), world.deps, dry_run=True)
    kinds = [a["kind"] for a in outcome.to_json()["plan"]["actions"]]  # type: ignore[index]
    assert kinds.count("drain-node") == 1 and kinds.count("delete-claim") == 1  # the plan once
    assert _deleting(world) == [] and world.cluster.evicted == []


def test_a_pod_disruption_budget_with_no_room_is_read_and_nothing_is_touched() -> None:
    world, nodes = _world("WhenUnderutilized")
    for node in nodes:
        pod = world.cluster.objects["Pod"][f"w-{node}"]
        world.cluster.objects["Pod"][f"w-{node}"] = pod.model_copy(
            update={
                "metadata": pod.metadata.model_copy(update={"labels": {**pod.metadata.labels, "app": "x"}})
            }
        )
    world.cluster.add(
        PodDisruptionBudget.model_validate(
            {
                "metadata": {"name": "x", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": "x"}}},
                "status": {"disruptionsAllowed": 0},
            }
        )
    )
    outcome = handle_compact(Compact(pool="pool-a", event_id="c1"), world.deps)
    assert _deleting(world) == [] and world.cluster.evicted == []
    assert not any(world.cluster.objects["Node"][n].spec.unschedulable for n in nodes)
    assert any("PodDisruptionBudget default/x allows 0" in r for r in outcome.plan.reasons)


def test_an_eviction_a_disruption_budget_refuses_keeps_the_claim() -> None:
    world, nodes = _world("WhenUnderutilized")
    world.cluster.pdb_blocked = {f"default/w-{n}" for n in nodes}
    outcome = handle_compact(Compact(pool="pool-a", event_id="c1"), world.deps)
    assert _deleting(world) == []
    assert any("disruption budget" in e for e in outcome.errors)
    # The node it could not drain is schedulable again, not left cordoned.
    assert not any(world.cluster.objects["Node"][n].spec.unschedulable for n in nodes)
