"""Nodes for the instances a cloud reports: a running claim instance's node joins after its fate's
join delay (labelled for the claim's pool), a pending or untagged one never does, a never-join
claim's node never registers, and a node leaves once its instance is gone; nodes carry the annotations
asked for (KWOK's, on the real control plane)."""

from __future__ import annotations

from datetime import timedelta

from gpupool.core.catalog import load_catalog
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import LABEL_MANAGED_BY
from gpupool.core.model.foreign import Node
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimSpec
from gpupool.core.quantity import Quantity
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.cluster.instance_nodes import InstanceNodes, SimInstance
from gpupool.simulation.cluster.kubelet import Kubelet
from gpupool.simulation.cluster.store import MemoryStore
from gpupool.testing.memory_ports import START, MemoryClock, MemoryCluster


def _instance(instance_id: str, state: str, claim: str | None) -> SimInstance:
    return SimInstance(
        instance_id, state, claim, "g4dn.xlarge", "us-east-1a", "us-east-1", f"ip-{instance_id}"
    )


def test_nodes_join_after_the_delay_and_leave_with_their_instance() -> None:
    clock = MemoryClock(START)
    cluster = MemoryCluster(clock)
    spec = GPUNodeClaimSpec(
        tflops_offered=Quantity.parse("65"), vram_offered=Quantity.parse("16Gi"), gpu_device_offered=1
    )
    cluster.add(GPUNodeClaim(metadata=ObjectMeta(name="c1", labels={LABEL_MANAGED_BY: "pool-a"}), spec=spec))
    instances = [
        _instance("i-1", "running", "c1"),
        _instance("i-2", "pending", "c2"),
        _instance("i-3", "running", None),
        _instance("i-4", "running", "c4"),
    ]
    nodes = InstanceNodes(
        Kubelet(MemoryStore(cluster), catalog=load_catalog("aws"), clock=clock),
        instances=lambda: list(instances),
        clock=clock,
        fates=CloudFates(FatesConfig.fixed(join_seconds=90)),
    )
    nodes.never_join("c4")
    assert nodes.step() == []
    clock.advance(timedelta(seconds=89))
    assert nodes.step() == []
    clock.advance(timedelta(seconds=1))
    assert [(c.change, c.node, c.claim) for c in nodes.step()] == [("joined", "ip-i-1", "c1")]
    gpu_node: GPUNode = cluster.objects["GPUNode"]["ip-i-1"]
    assert gpu_node.metadata.labels == {"tensor-fusion.ai/pool-pool-a": "true"}, "the claim's pool"
    node: Node = cluster.objects["Node"]["ip-i-1"]
    assert node.spec.provider_id == "aws:///us-east-1a/i-1"
    assert nodes.step() == [], "a node joins once"
    instances[0] = _instance("i-1", "terminated", "c1")
    assert [(c.change, c.node, c.instance_id) for c in nodes.step()] == [("left", "ip-i-1", "i-1")]
    assert cluster.objects["Node"] == {} and cluster.objects["GPUNode"] == {}


def test_nodes_carry_the_annotations_asked_for() -> None:
    """On the real control plane the joined nodes are KWOK's to run (`kwok.x-k8s.io/node: fake`)."""
    clock = MemoryClock(START)
    cluster = MemoryCluster(clock)
    nodes = InstanceNodes(
        Kubelet(MemoryStore(cluster), catalog=load_catalog("aws"), clock=clock),
        instances=lambda: [_instance("i-1", "running", "c1")],
        clock=clock,
        fates=CloudFates(FatesConfig.fixed(join_seconds=0)),
        node_annotations={"kwok.x-k8s.io/node": "fake"},
    )
    assert [c.change for c in nodes.step()] == ["joined"]
    node: Node = cluster.objects["Node"]["ip-i-1"]
    assert node.metadata.annotations == {"kwok.x-k8s.io/node": "fake"}
