"""The simulated kubelet and node agent, through both backings of the one `ClusterStore`: the
same registration writes the same Node (labels, providerID, Ready, capacity from the catalog),
GPUNode and GPUs into memory and, as raw JSON, into the embedded API server; a second one changes
nothing; usage reports follow each GPU's free share; deregistration takes the GPUs, the GPUNode,
the Node and the pods bound to it."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest

from gpupool.core.catalog import load_catalog
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.foreign import Container, Node, Pod, PodSpec
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.quantity import Quantity
from gpupool.sandbox.demo.objects import KubeObjects
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.simulation.cluster.json_store import JsonStore
from gpupool.simulation.cluster.kubelet import Kubelet, NodeRegistration
from gpupool.simulation.cluster.store import ClusterStore, MemoryStore
from gpupool.testing.memory_ports import START, MemoryClock, MemoryCluster

T4_NODE = NodeRegistration(
    name="ip-10-0-0-4.ec2.internal",
    instance_type="g4dn.12xlarge",  # 4 × T4
    zone="us-east-1a",
    region="us-east-1",
    provider_id="aws:///us-east-1a/i-0123",
    instance_id="i-0123",
    claim="pool-a-0001",
    pool="pool-a",
)


@pytest.fixture(params=["memory", "json"])
def kubelet(request: pytest.FixtureRequest) -> Iterator[Kubelet]:
    clock = MemoryClock(START)
    store: ClusterStore
    if request.param == "memory":
        store = MemoryStore(MemoryCluster(clock))
    else:
        store = JsonStore(KubeObjects(EmbeddedKubeAPI(clock=clock).cluster))  # in process, no HTTP
    yield Kubelet(store, catalog=load_catalog("aws"), clock=clock)


def test_a_registered_node_is_what_a_real_node_and_its_agent_publish(kubelet: Kubelet) -> None:
    assert kubelet.register(T4_NODE)
    node = kubelet.store.get(Node, T4_NODE.name)
    assert node is not None and node.is_ready()
    assert node.metadata.labels == {
        "nvidia.com/gpu.present": "true",
        "node.kubernetes.io/instance-type": "g4dn.12xlarge",
        "topology.kubernetes.io/zone": "us-east-1a",
        "topology.kubernetes.io/region": "us-east-1",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "tensor-fusion.ai/node-provisioner": "pool-a-0001",
        "kubernetes.io/hostname": T4_NODE.name,
    }
    assert node.spec.provider_id == "aws:///us-east-1a/i-0123"
    assert node.status.allocatable["nvidia.com/gpu"] == Quantity.parse("4")
    gpu_node = kubelet.store.get(GPUNode, T4_NODE.name)
    assert gpu_node is not None and gpu_node.status is not None
    assert gpu_node.spec.manage_mode == "Provisioned"
    assert gpu_node.metadata.labels == {"tensor-fusion.ai/pool-pool-a": "true"}
    status = gpu_node.status
    assert (status.phase, status.total_gpus, status.total_tflops, status.total_vram) == (
        "Running",
        4,
        Quantity.parse("260"),
        Quantity.parse("64Gi"),
    )
    gpus = kubelet.store.list(GPU)
    assert sorted(g.name for g in gpus) == sorted(status.managed_gpu_device_ids) and len(gpus) == 4
    assert {g.metadata.labels["tensor-fusion.ai/gpupool"] for g in gpus} == {"pool-a"}
    assert not kubelet.register(T4_NODE), "a second registration changes nothing"
    assert len(kubelet.store.list(GPU)) == 4


def test_usage_follows_each_gpus_free_share(kubelet: Kubelet) -> None:
    kubelet.register(T4_NODE)
    kubelet.report_usage(T4_NODE.name, [Decimal(0), Decimal("0.5"), Decimal(1), Decimal(1)])
    gpu_node = kubelet.store.get(GPUNode, T4_NODE.name)
    assert gpu_node is not None and gpu_node.status is not None
    assert gpu_node.status.available_tflops == Quantity.parse("162.5")  # 2.5 × 65
    assert gpu_node.status.available_vram == Quantity.parse("40Gi")  # 2.5 × 16Gi
    by_index = {g.status.index: g.status.available for g in kubelet.store.list(GPU) if g.status}
    assert by_index[0] is not None and by_index[0].tflops == Quantity.parse("0")
    assert by_index[1] is not None and by_index[1].vram == Quantity.parse("8Gi")
    assert by_index[3] is not None and by_index[3].tflops == Quantity.parse("65")


def test_deregistration_takes_the_gpus_the_gpu_node_the_node_and_its_pods(kubelet: Kubelet) -> None:
    kubelet.register(T4_NODE)
    kubelet.register(
        NodeRegistration("other", "g4dn.xlarge", "us-east-1b", "us-east-1", "aws:///us-east-1b/i-9", "i-9")
    )
    for pod, node in (("on-it", T4_NODE.name), ("elsewhere", "other")):
        kubelet.store.create(
            Pod(
                metadata=ObjectMeta(name=pod, namespace="default"),
                spec=PodSpec(node_name=node, containers=[Container(name="worker", image="worker")]),
            )
        )
    assert kubelet.deregister(T4_NODE.name)
    assert kubelet.store.get(Node, T4_NODE.name) is None and kubelet.store.get(GPUNode, T4_NODE.name) is None
    assert [g.metadata.labels["kubernetes.io/hostname"] for g in kubelet.store.list(GPU)] == ["other"]
    assert [p.name for p in kubelet.store.list(Pod)] == ["elsewhere"]
    assert not kubelet.deregister(T4_NODE.name), "it had already left"
