"""Compaction service against fakes: idle nodes go only after the 5-minute protection, never
when do-not-disrupt is set on the node or its GPUNode, never below warm or min; removals are
re-validated right before deleting; a pod gpupool's own webhook admitted (labelled
`tensor-fusion.ai/enabled=true`, no component label) keeps its node; a GPUNode reporting capacity
allocated keeps its node without its pods being read; only the nodes compaction would remove have
their pods read; the pool's nodeCompaction.period and the manual-compaction annotation decide when it
runs; a removed claim's instance is terminated by bind.
"""

from __future__ import annotations

from datetime import timedelta

from gpupool.core.intake.causes import ClaimDeleted, Compact, Reconcile, Sweep
from gpupool.core.model.constants import ANNOTATION_MANUAL_COMPACTION, LABEL_DO_NOT_DISRUPT
from gpupool.core.model.foreign import Pod
from gpupool.core.model.pool import GPUPool
from gpupool.sandbox.kubeapi.patch import json_patch
from gpupool.scheduler.admission.mutate import AdmissionContext, PoolInfo, mutate_pod
from gpupool.service.bind import handle_bind
from gpupool.service.compact import handle_compact
from gpupool.service.launch import handle_launch
from tests.service.fakes import World, make_pool


def world_with_nodes(count: int, **later: str | None) -> tuple[World, list[str]]:
    """`count` Bound g4dn nodes (65 TFLOPS / 16Gi each), then the pool's capacity set to `later`."""
    world = World(make_pool(min_tflops=str(65 * count), min_vram=f"{16 * count}Gi"))
    handle_launch(Reconcile(trigger="schedule", event_id="e0"), world.deps)
    nodes = []
    for index, claim in enumerate(world.claims()):
        labels = {LABEL_DO_NOT_DISRUPT: "true"} if later.get(f"protect_node_{index}") else {}
        gpu_labels = {LABEL_DO_NOT_DISRUPT: "true"} if later.get(f"protect_gpunode_{index}") else {}
        busy = "0" if later.get(f"busy_node_{index}") else None
        nodes.append(
            world.cluster.join_node(
                claim.name,
                labels=labels,
                gpu_node_labels=gpu_labels,
                available_tflops=busy,
                available_vram=busy,
            )
        )
    handle_bind(Sweep(event_id="s0"), world.deps)
    capacity = {k: v for k, v in later.items() if not k.startswith(("protect_", "busy_"))}
    set_pool(world, make_pool(**capacity))  # type: ignore[arg-type]
    return world, nodes


def set_pool(world: World, pool: GPUPool) -> None:
    current = world.pool()
    world.cluster.objects["GPUPool"][pool.name] = pool.model_copy(
        update={
            "metadata": current.metadata.model_copy(update={"annotations": pool.metadata.annotations}),
            "status": current.status,
        }
    )


def compact(world: World, *, manual: bool = False, event_id: str = "c1") -> list[str]:
    outcome = handle_compact(Compact(pool="pool-a", manual=manual, event_id=event_id), world.deps)
    assert outcome.errors == []
    return sorted(c.name for c in world.claims() if c.metadata.deletion_timestamp is not None)


def test_new_nodes_are_protected_for_five_minutes() -> None:
    world, _ = world_with_nodes(3, min_tflops=None, min_vram=None)
    world.clock.advance(timedelta(minutes=4))
    assert compact(world) == []
    world.clock.advance(timedelta(minutes=2))
    assert len(compact(world, manual=True)) == 3
    assert len(world.cluster.events_with("Compaction")) == 3


def test_do_not_disrupt_on_the_node_or_its_gpunode_protects_it() -> None:
    world, _ = world_with_nodes(3, min_tflops=None, min_vram=None, protect_node_0="1", protect_gpunode_1="1")
    world.clock.advance(timedelta(minutes=6))
    deleting = compact(world)
    claims = sorted(c.name for c in world.claims())
    assert deleting == [claims[2]]


def test_workers_keep_a_node_and_warm_keeps_enough_available() -> None:
    world, nodes = world_with_nodes(
        3, min_tflops=None, min_vram=None, warm_tflops="65", warm_vram="16Gi", busy_node_0="1"
    )
    world.cluster.add_pod("worker-1", nodes[0], worker=True)
    world.clock.advance(timedelta(minutes=6))
    deleting = compact(world)
    claims = sorted(c.name for c in world.claims())
    # node 0 runs a worker that uses all of it; of the two idle nodes one must stay so that
    # 65 TFLOPS / 16Gi remain available.
    assert deleting == [claims[1]]


def test_a_pod_gpupools_webhook_admitted_keeps_its_node() -> None:
    """The webhook labels a pod `tensor-fusion.ai/enabled=true` and sets no component label:
    it is a TensorFusion pod all the same (`core.vocabulary.pods`), so its node is not idle."""
    world, nodes = world_with_nodes(3, min_tflops=None, min_vram=None)
    raw: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "trainer",
            "namespace": "team",
            "labels": {"tensor-fusion.ai/enabled": "true"},
            "annotations": {"tensor-fusion.ai/tflops-request": "10", "tensor-fusion.ai/vram-request": "1Gi"},
        },
        "spec": {"containers": [{"name": "main", "image": "cuda"}]},
    }
    admitted = mutate_pod(
        raw, "team", AdmissionContext(pools={"pool-a": PoolInfo("pool-a")}, default_pool="pool-a")
    )
    pod = Pod.model_validate(json_patch(raw, admitted.patch))
    assert "tensor-fusion.ai/component" not in pod.metadata.labels
    world.cluster.add(pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": nodes[1]})}))
    world.clock.advance(timedelta(minutes=6))
    deleting = compact(world)
    claims = sorted(c.name for c in world.claims())
    assert deleting == [claims[0], claims[2]]


def test_only_the_nodes_compaction_would_remove_have_their_pods_read() -> None:
    world, nodes = world_with_nodes(
        4, min_tflops="195", min_vram="48Gi", busy_node_0="1", busy_node_1="1"
    )  # 0 and 1 report GPUs allocated; min keeps three nodes
    world.clock.advance(timedelta(minutes=6))
    deleting = compact(world)
    claims = sorted(c.name for c in world.claims())
    assert deleting == [claims[2]]
    read_on = [args[0] for name, args in world.cluster.calls if name == "list_pods"]
    assert set(read_on) == {nodes[2]}, read_on  # confirmed, then re-validated right before deleting


def test_min_keeps_total_capacity() -> None:
    world, _ = world_with_nodes(3, min_tflops="130", min_vram="32Gi")
    world.clock.advance(timedelta(minutes=6))
    assert len(compact(world)) == 1
    world.clock.advance(timedelta(minutes=6))
    assert len(compact(world, event_id="c2")) == 1, "a second run removes nothing more"


def test_removal_is_revalidated_right_before_deleting() -> None:
    world, nodes = world_with_nodes(2, min_tflops=None, min_vram=None)
    world.clock.advance(timedelta(minutes=6))
    reads = {"count": 0}
    original = world.cluster.list_pods

    def list_pods(*, node_name=None, phase=None):  # type: ignore[no-untyped-def]
        pods = original(node_name=node_name, phase=phase)
        reads["count"] += 1
        if reads["count"] == 1:  # after the plan was made, a workload lands on both nodes
            for node in nodes:
                world.cluster.add_pod(f"worker-{node}", node, worker=True)
        return pods

    world.cluster.list_pods = list_pods  # type: ignore[method-assign]
    assert compact(world) == []


def test_period_and_manual_compaction_annotation_decide_when_it_runs() -> None:
    world, _ = world_with_nodes(2, min_tflops="65", min_vram="16Gi")
    world.clock.advance(timedelta(minutes=6))
    first = compact(world)
    assert len(first) == 1
    status = world.pool().status
    assert status is not None and status.last_compaction_time == world.clock.now()
    # min drops to zero, but nodeCompaction.period (5m) has not elapsed: nothing runs …
    set_pool(world, make_pool(min_tflops=None, min_vram=None))
    world.clock.advance(timedelta(minutes=4))
    assert compact(world, event_id="c2") == first
    # … until the manual-compaction annotation (newer than the last run) asks for it.
    manual = make_pool(min_tflops=None, min_vram=None)
    stamp = world.clock.now().isoformat()
    annotated = manual.model_copy(
        update={
            "metadata": manual.metadata.model_copy(
                update={"annotations": {ANNOTATION_MANUAL_COMPACTION: stamp}}
            )
        }
    )
    set_pool(world, annotated)
    assert len(compact(world, event_id="c3")) == 2


def test_compaction_deletes_the_claim_and_bind_terminates_the_instance() -> None:
    world, _ = world_with_nodes(1, min_tflops=None, min_vram=None)
    world.clock.advance(timedelta(minutes=6))
    (claim,) = compact(world)
    instance_id = world.claim(claim).status.instance_id  # type: ignore[union-attr]
    handle_bind(ClaimDeleted(claim=claim, event_id="d1"), world.deps)
    assert world.compute.instances[instance_id].state == "terminated"
    assert world.claim(claim) is None
