"""AutoSelect expansion against fakes: pods short of GPU capacity only get NodeClaims copied from a
Karpenter-owned GPU node (≤ 15 in flight, all placeable once nodes join); pods blocked by CPU or
taints get no expansion and a reason; a capacity failure moves to the next candidate."""

from __future__ import annotations

import json
from typing import Any

from gpupool.core.intake.causes import Reconcile
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.service.launch import handle_launch
from tests.service.fakes import make_pool
from tests.service.test_karpenter_mode import KarpenterWorld

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def autoselect_world() -> KarpenterWorld:
    world = KarpenterWorld(make_pool(mode="AutoSelect", min_tflops=None, min_vram=None))
    template = KarpenterNodeClaim.model_validate(
        {
            "metadata": {"name": "gpu-abcde", "labels": {"karpenter.sh/nodepool": "gpu"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                ],
                "resources": {"requests": {"nvidia.com/gpu": "1"}},
                "taints": [GPU_TAINT],
            },
            "status": {"nodeName": "gpu-node-0", "conditions": [{"type": "Registered", "status": "True"}]},
        }
    )
    world.karpenter.nodeclaims[template.name] = template
    world.karpenter.nodepools["gpu"] = KarpenterNodePool.model_validate(
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": ["g5.xlarge", "g6.xlarge"],
                            },
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["us-east-1a", "us-east-1b"],
                            },
                        ]
                    }
                }
            },
        }
    )
    world.cluster.add(
        Node.model_validate(
            {
                "metadata": {
                    "name": "gpu-node-0",
                    "labels": {
                        "nvidia.com/gpu.present": "true",
                        "karpenter.sh/nodepool": "gpu",
                        "team": "ml",
                    },
                },
                "spec": {"taints": [GPU_TAINT]},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}},
            }
        )
    )
    return world


def pending_pod(name: str, *, cpu: str = "1", tolerate: bool = True, **spec: Any) -> Pod:
    tolerations = (
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}] if tolerate else []
    )
    return Pod.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": "ml",
                "labels": {"tensor-fusion.ai/enabled": "true"},
                "annotations": {"tensor-fusion.ai/gpupool": "pool-a"},
            },
            "spec": {
                "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
                "tolerations": tolerations,
                **spec,
            },
            "status": {
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
            },
        }
    )


def add_idle_gpu_node(
    world: KarpenterWorld, name: str, labels: dict[str, str], annotations: dict[str, str] | None = None
) -> None:
    """A Ready node of pool-a with one idle 65-TFLOPS / 16 GiB GPU."""
    from gpupool.core.model.base import ObjectMeta
    from gpupool.core.model.node import GPUNode, GPUNodeStatus
    from gpupool.core.quantity import Quantity

    world.cluster.add(
        Node.model_validate(
            {
                "metadata": {"name": name, "labels": labels, "annotations": annotations or {}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }
        ),
        GPUNode(
            metadata=ObjectMeta(name=name, labels={"tensor-fusion.ai/gpupool": "pool-a"}),
            status=GPUNodeStatus(
                phase="Running",
                total_tflops=Quantity(65),
                total_vram=Quantity.parse("16Gi"),
                available_tflops=Quantity(65),
                available_vram=Quantity.parse("16Gi"),
                total_gpus=1,
            ),
        ),
    )


def expand(world: KarpenterWorld, event_id: str = "pod-1") -> Any:
    return handle_launch(Reconcile(pool="pool-a", trigger="pod.unschedulable", event_id=event_id), world.deps)


def expansions(world: KarpenterWorld) -> list[KarpenterNodeClaim]:
    return [n for n in world.karpenter.live() if "tensor-fusion.ai/expansion-source" in n.metadata.labels]


def in_flight(world: KarpenterWorld) -> list[KarpenterNodeClaim]:
    return [n for n in expansions(world) if not any(c.type == "Registered" for c in n.status.conditions)]


def join(world: KarpenterWorld) -> list[tuple[str, str]]:
    """Karpenter registers every in-flight NodeClaim: (pod it was made for, its node)."""
    joined = []
    for nodeclaim in in_flight(world):
        node = world.karpenter.register(world, nodeclaim.name)
        joined.append((nodeclaim.metadata.annotations["gpupool.io/expansion-for"].split("/")[1], node))
    return joined


def place(world: KarpenterWorld, joined: list[tuple[str, str]]) -> None:
    """The scheduler binds each pod to the node made for it."""
    for pod_name, node in joined:
        pod: Pod = world.cluster.get("Pod", pod_name)
        world.cluster.add(pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})}))


def test_thirty_pods_get_nodeclaims_at_most_fifteen_in_flight_and_all_are_placed() -> None:
    world = autoselect_world()
    world.cluster.add(*(pending_pod(f"w-{i:02d}") for i in range(30)))
    rounds = 0
    while any(p.spec.node_name is None for p in world.cluster.all("Pod")):
        rounds += 1
        assert rounds <= 4, "every pod should be placeable within a few rounds"
        assert expand(world, f"e{rounds}").errors == []
        expand(world, f"e{rounds}-again")  # a duplicate event changes nothing
        assert 0 < len(in_flight(world)) <= 15
        joined = join(world)
        expand(world, f"e{rounds}-joined")  # reports NodeExpansionCompleted while the pods still wait
        place(world, joined)
    assert len(expansions(world)) == 30 and rounds == 2
    completed = world.cluster.events_with("NodeExpansionCompleted")
    assert len(completed) == 30 and all(e["count"] == 1 for e in completed)
    first = expansions(world)[0]
    assert first.metadata.labels["karpenter.sh/nodepool"] == "gpu"
    assert first.metadata.labels["tensor-fusion.ai/expansion-source"] == "gpu-node-0"
    assert first.spec.node_class_ref is not None and first.spec.taints[0].key == "nvidia.com/gpu"


def test_pods_blocked_by_cpu_or_taints_get_no_expansion_and_a_reason() -> None:
    world = autoselect_world()
    world.cluster.add(pending_pod("too-big", cpu="64"), pending_pod("intolerant", tolerate=False))
    outcome = expand(world)
    assert expansions(world) == []
    messages = {e["name"]: e["message"] for e in world.cluster.events_with("NodeExpansionCheck")}
    assert "requests cpu 64" in (messages["too-big"] or "")
    assert "does not tolerate the taint nvidia.com/gpu" in (messages["intolerant"] or "")
    assert any("more than GPU capacity is missing" in r for r in outcome.plan.reasons)


def test_a_nodeclaim_karpenter_deletes_for_capacity_is_a_failed_candidate_and_the_next_is_made() -> None:
    world = autoselect_world()
    world.cluster.add(pending_pod("w-0"))
    expand(world)
    (first,) = expansions(world)
    world.karpenter.insufficient_capacity(first.name)  # Karpenter deletes it; no Launched=False
    expand(world, "e2")
    (second,) = expansions(world)
    zones = [r.values for r in second.spec.requirements if r.key == "topology.kubernetes.io/zone"]
    types = [r.values for r in second.spec.requirements if r.key == "node.kubernetes.io/instance-type"]
    # the test catalog offers g5.xlarge in us-east-1a only: the next candidate is g6.xlarge there
    assert (types, zones) == ([["g6.xlarge"]], [["us-east-1a"]])
    memory = json.loads(world.pool().metadata.annotations["gpupool.io/autoselect-expansions"])
    assert memory == {
        "ml/w-0": {
            "nodeClaim": second.name,
            "candidate": "g6.xlarge/us-east-1a",
            "tried": ["g5.xlarge/us-east-1a"],
        }
    }, "remembered for the pod, on the pool"
    unavailable = json.loads(world.pool().metadata.annotations["gpupool.io/unavailable-offerings"])
    assert list(unavailable) == ["g5.xlarge/us-east-1a/OnDemand"], "the memory capacity errors use"
    failed = world.cluster.events_with("NodeExpansionFailed")
    assert failed and "deleted before its node registered" in (failed[0]["message"] or "")
    expand(world, "e3")
    assert [n.name for n in expansions(world)] == [second.name], "an in-flight one is not made twice"


def test_a_nodeclaim_karpenter_keeps_retrying_stays_in_flight() -> None:
    world = autoselect_world()
    world.cluster.add(pending_pod("w-0"))
    expand(world)
    (first,) = expansions(world)
    world.karpenter.launch_error(first.name, "UnauthorizedOperation")  # Launched=Unknown
    expand(world, "e2")
    assert [n.name for n in expansions(world)] == [first.name]
    assert world.cluster.events_with("NodeExpansionFailed") == []


def test_the_pods_nodeselector_narrows_the_candidates() -> None:
    world = autoselect_world()
    world.cluster.add(pending_pod("w-0", nodeSelector={"node.kubernetes.io/instance-type": "g6.xlarge"}))
    expand(world)
    (made,) = expansions(world)
    assert [r.values for r in made.spec.requirements if r.key == "node.kubernetes.io/instance-type"] == [
        ["g6.xlarge"]
    ]


def _relabelled(pod: Pod, *, labels: dict[str, str], annotations: dict[str, str], **meta: Any) -> Pod:
    update = {"labels": labels, "annotations": annotations, **meta}
    return pod.model_copy(update={"metadata": pod.metadata.model_copy(update=update)})


def test_only_the_pools_tensorfusion_pods_waiting_for_gpus_are_expanded_for() -> None:
    """The pod predicates are the vocabulary's (`core.vocabulary.pods`), shared with the relay: a
    pod whose pool only TensorFusion's webhook labelled counts; a native pod progressive migration
    put on tensor-fusion-scheduler, a remote-vGPU client, another pool's pod and a pod being
    deleted do not."""
    from datetime import UTC, datetime

    world = autoselect_world()
    enabled = {"tensor-fusion.ai/enabled": "true"}
    world.cluster.add(
        pending_pod("annotated"),
        _relabelled(
            pending_pod("labelled"), labels={**enabled, "tensor-fusion.ai/gpupool": "pool-a"}, annotations={}
        ),
        _relabelled(
            pending_pod("native", schedulerName="tensor-fusion-scheduler"),
            labels={},
            annotations={"tensor-fusion.ai/gpupool": "pool-a"},
        ),
        _relabelled(
            pending_pod("client"),
            labels={**enabled, "tensor-fusion.ai/component": "client"},
            annotations={"tensor-fusion.ai/gpupool": "pool-a"},
        ),
        _relabelled(
            pending_pod("elsewhere"), labels=enabled, annotations={"tensor-fusion.ai/gpupool": "pool-b"}
        ),
        _relabelled(
            pending_pod("leaving"),
            labels=enabled,
            annotations={"tensor-fusion.ai/gpupool": "pool-a"},
            deletion_timestamp=datetime(2026, 12, 1, tzinfo=UTC),
        ),
    )
    expand(world)
    made_for = sorted(
        n.metadata.annotations["gpupool.io/expansion-for"].split("/")[1] for n in expansions(world)
    )
    assert made_for == ["annotated", "labelled"]


def test_without_a_karpenter_template_there_is_no_expansion_and_a_reason() -> None:
    """GPU nodes exist but no NodePool owns one: TensorFusion's NodeExpansionFailed."""
    world = autoselect_world()
    world.karpenter.nodeclaims.clear()
    world.cluster.add(pending_pod("w-0"))
    expand(world)
    assert world.karpenter.nodeclaims == {}
    assert "none is owned by a Karpenter NodePool's NodeClaim" in (
        world.cluster.events_with("NodeExpansionFailed")[0]["message"] or ""
    )


def test_scaling_from_zero_is_left_to_karpenter_with_one_event() -> None:
    world = KarpenterWorld(make_pool(mode="AutoSelect", min_tflops=None, min_vram=None))
    world.cluster.add(pending_pod("w-0"), pending_pod("w-1"))
    expand(world)
    assert world.karpenter.nodeclaims == {}
    (event,) = world.cluster.events_with("NodeExpansionCheck")
    assert "left to Karpenter's own provisioning" in (event["message"] or "")
    assert "2 pod(s)" in (event["message"] or "")


def test_compaction_in_autoselect_only_labels_should_delete_under_the_seed_rules() -> None:
    from datetime import timedelta

    from gpupool.core.intake.causes import Compact
    from gpupool.service.compact import handle_compact

    world = KarpenterWorld(
        make_pool(mode="AutoSelect", min_tflops=None, min_vram=None, warm_tflops="195", warm_vram="48Gi")
    )
    for name, labels in (
        ("busy", {}),
        ("protected", {"tensor-fusion.ai/do-not-disrupt": "true"}),
        ("idle-1", {}),
        ("idle-2", {}),
    ):
        add_idle_gpu_node(world, name, labels)
    world.cluster.add_pod("worker", "busy", worker=True)
    world.clock.advance(timedelta(minutes=6))
    outcome = handle_compact(Compact(pool="pool-a", manual=False, event_id="c1"), world.deps)
    assert outcome.errors == []
    marked = sorted(
        n.name
        for n in world.cluster.all("Node")
        if n.metadata.labels.get("tensor-fusion.ai/should-delete") == "true"
    )
    assert marked == ["idle-1"], "busy and do-not-disrupt nodes are kept, and one idle node stays for warm"
    assert world.karpenter.count("delete_nodeclaim") == 0, "deletion is left to Karpenter"
    assert world.cluster.events_with("Compaction")


def test_compaction_guards_the_karpenter_nodes_gpupool_needs_and_releases_them_when_not() -> None:
    """Karpenter consolidates any empty node without `karpenter.sh/do-not-disrupt`: the nodes
    warm keeps and the young ones carry it (gpupool's marker beside it), a node no longer needed
    loses it with the should-delete label, and a do-not-disrupt a person set is never touched."""
    from datetime import timedelta

    from gpupool.core.intake.causes import Compact
    from gpupool.service.compact import handle_compact

    world = KarpenterWorld(
        make_pool(mode="AutoSelect", min_tflops=None, min_vram=None, warm_tflops="130", warm_vram="32Gi")
    )

    def add(name: str, annotations: dict[str, str] | None = None) -> None:
        add_idle_gpu_node(world, name, {"karpenter.sh/nodepool": "gpu"}, annotations)

    add("idle-a")
    add("idle-b")
    add("person", {"karpenter.sh/do-not-disrupt": "true"})
    world.clock.advance(timedelta(minutes=2))

    def notes() -> dict[str, dict[str, str]]:
        return {n.name: dict(n.metadata.annotations) for n in world.cluster.all("Node")}

    handle_compact(Compact(pool="pool-a", manual=True, event_id="young"), world.deps)
    young = notes()
    assert young["idle-a"]["gpupool.io/do-not-disrupt-for"] == "protection"
    assert young["idle-b"]["karpenter.sh/do-not-disrupt"] == "true", "protected for its first 5 minutes"
    world.clock.advance(timedelta(minutes=6))
    handle_compact(Compact(pool="pool-a", manual=True, event_id="old"), world.deps)
    old = notes()
    marked = sorted(
        n.name for n in world.cluster.all("Node") if n.metadata.labels.get("tensor-fusion.ai/should-delete")
    )
    assert marked == ["idle-a"], "warm needs two nodes: the person's (Karpenter keeps it) and idle-b"
    assert "karpenter.sh/do-not-disrupt" not in old["idle-a"], "not needed: Karpenter may remove it"
    assert old["idle-b"]["gpupool.io/do-not-disrupt-for"] == "warm-min", "the marker says why now"
    assert old["idle-b"]["karpenter.sh/do-not-disrupt"] == "true", (
        "warm needs it: Karpenter must not remove it"
    )
    assert old["person"] == {"karpenter.sh/do-not-disrupt": "true"}, "a person's annotation is left alone"
