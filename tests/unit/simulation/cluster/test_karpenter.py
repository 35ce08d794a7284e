"""The simulated Karpenter, through both backings: a NodeClaim launches (providerID, Launched) and
its node registers when its fate says (the NodeClaim's labels and taints, the pinned labels,
Registered and Initialized, nodeName); a capacity failure deletes the NodeClaim at once, or at the
next step when failures linger (the demo's stories); a Spot interruption notice deletes it, and the
finalizer (memory) or the orphan sweep (the sandbox, no finalizer) takes its node."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest

from gpupool.core.catalog import load_catalog
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import (
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_ZONE,
    LABEL_NODE_PROVISIONER,
)
from gpupool.core.model.foreign import Node, NodeTaint
from gpupool.core.model.karpenter import (
    KarpenterNodeClaim,
    KarpenterNodeClaimSpec,
    KarpenterNodeClassRef,
    KarpenterRequirement,
)
from gpupool.core.model.node import GPUNode
from gpupool.sandbox.demo.objects import KubeObjects
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.cluster.json_store import JsonStore
from gpupool.simulation.cluster.karpenter import SimulatedKarpenter
from gpupool.simulation.cluster.kubelet import Kubelet
from gpupool.simulation.cluster.store import ClusterStore, MemoryStore
from gpupool.testing.memory_ports import START, MemoryClock, MemoryCluster, MemoryKarpenter

NAME = "pool-a-0001"
TAINT = NodeTaint(key="nvidia.com/gpu", value="true", effect="NoSchedule")


@dataclass
class Cluster:
    clock: MemoryClock
    kubelet: Kubelet
    backing: str

    @property
    def store(self) -> ClusterStore:
        return self.kubelet.store

    def karpenter(self, config: FatesConfig, *, failed_linger: bool = False) -> SimulatedKarpenter:
        return SimulatedKarpenter(
            self.kubelet,
            CloudFates(config),
            clock=self.clock,
            region="us-east-1",
            failed_linger=failed_linger,
        )

    def nodeclaim(self) -> KarpenterNodeClaim | None:
        return self.store.get(KarpenterNodeClaim, NAME)


def _nodeclaim(capacity_type: str = "on-demand") -> KarpenterNodeClaim:
    pinned = {KEY_INSTANCE_TYPE: "g4dn.xlarge", KEY_ZONE: "us-east-1a", KEY_CAPACITY_TYPE: capacity_type}
    return KarpenterNodeClaim(
        metadata=ObjectMeta(name=NAME, labels={LABEL_NODE_PROVISIONER: NAME, "team": "ml"}),
        spec=KarpenterNodeClaimSpec(
            node_class_ref=KarpenterNodeClassRef(
                group="karpenter.k8s.aws", kind="EC2NodeClass", name="default"
            ),
            requirements=[KarpenterRequirement(key=k, operator="In", values=[v]) for k, v in pinned.items()],
            taints=[TAINT],
        ),
    )


@pytest.fixture(params=["memory", "json"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    clock = MemoryClock(START)
    store: ClusterStore
    if request.param == "memory":
        store = MemoryStore(MemoryCluster(clock), MemoryKarpenter(clock))
    else:
        store = JsonStore(KubeObjects(EmbeddedKubeAPI(clock=clock).cluster))
    yield Cluster(clock, Kubelet(store, catalog=load_catalog("aws"), clock=clock), request.param)


def test_a_nodeclaim_launches_and_its_node_registers_when_its_fate_says(cluster: Cluster) -> None:
    karpenter = cluster.karpenter(FatesConfig.fixed(boot_seconds=60, join_seconds=30))
    cluster.store.create(_nodeclaim())
    (launched,) = karpenter.launch()
    assert (launched.change, launched.detail, launched.offering) == (
        "launched",
        "g4dn.xlarge/us-east-1a",
        "g4dn.xlarge/us-east-1a/OnDemand",
    )
    nodeclaim = cluster.nodeclaim()
    assert nodeclaim is not None and (nodeclaim.status.provider_id or "").startswith("aws:///us-east-1a/i-")
    assert karpenter.launch() == [], "a launched NodeClaim is not launched again"
    cluster.clock.advance(timedelta(seconds=89))
    assert list(karpenter.progress()) == []
    cluster.clock.advance(timedelta(seconds=1))
    (registered,) = karpenter.progress()
    assert registered.change == "registered" and registered.node is not None
    nodeclaim = cluster.nodeclaim()
    assert nodeclaim is not None and nodeclaim.status.node_name == registered.node
    assert [(c.type, c.status) for c in nodeclaim.status.conditions] == [
        ("Launched", "True"),
        ("Registered", "True"),
        ("Initialized", "True"),
    ]
    node = cluster.store.get(Node, registered.node)
    assert node is not None and node.spec.taints == [TAINT]
    assert node.spec.provider_id == nodeclaim.status.provider_id
    labels = node.metadata.labels
    assert (labels["team"], labels[LABEL_NODE_PROVISIONER], labels["karpenter.sh/registered"]) == (
        "ml",
        NAME,
        "true",
    )
    assert labels[KEY_CAPACITY_TYPE] == "on-demand" and labels["topology.kubernetes.io/region"] == "us-east-1"
    assert cluster.store.get(GPUNode, registered.node) is not None, "the node agent's GPUNode"


def test_a_capacity_failure_deletes_the_nodeclaim_at_once_or_at_the_next_step(cluster: Cluster) -> None:
    at_once = cluster.karpenter(FatesConfig.fixed())
    at_once.insufficient_capacity("g4dn.xlarge", "us-east-1a")
    cluster.store.create(_nodeclaim())
    assert [c.change for c in at_once.launch()] == ["launch-failed"]
    left = cluster.nodeclaim()
    assert left is None or left.metadata.deletion_timestamp is not None, "deleted at once"
    list(at_once.finalize())
    assert cluster.nodeclaim() is None

    lingering = cluster.karpenter(FatesConfig.fixed(), failed_linger=True)
    lingering.insufficient_capacity("g4dn.xlarge", "us-east-1a")
    cluster.store.create(_nodeclaim())
    assert [c.change for c in lingering.step()] == ["launch-failed"]
    failed = cluster.nodeclaim()
    assert failed is not None and [(c.type, c.status, c.reason) for c in failed.status.conditions] == [
        ("Launched", "False", "InsufficientCapacity")
    ]
    # Memory has Karpenter's finalizer: the deleted NodeClaim is finalized in the same step.
    assert [c.change for c in lingering.step() if c.change != "finalized"] == ["deleted"]
    assert lingering.step() == []
    assert cluster.nodeclaim() is None


def test_an_interruption_notice_deletes_the_nodeclaim_and_its_node_leaves(cluster: Cluster) -> None:
    config = FatesConfig(
        boot_seconds=(0, 0), join_seconds=(0, 0), spot_interruption_share=1.0, capacity_failure_share=0
    )
    karpenter = cluster.karpenter(config)
    cluster.store.create(_nodeclaim("spot"))
    (launched,) = karpenter.launch()
    assert launched.fate is not None and launched.fate.interrupted_after is not None
    (registered,) = karpenter.progress()
    cluster.clock.advance(timedelta(seconds=launched.fate.interrupted_after))
    assert [c.change for c in karpenter.progress()] == ["interrupted"]
    changes = karpenter.step()
    left = [c.node for c in changes if c.change in ("finalized", "node-removed")]
    assert left == [registered.node], "Karpenter's finalizer (or, without one, its orphan sweep)"
    assert cluster.nodeclaim() is None and cluster.store.get(Node, registered.node or "") is None
