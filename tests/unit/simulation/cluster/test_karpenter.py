"""The simulated Karpenter, through both backings, as Karpenter's controllers behave: a NodeClaim
launches (what was launched in its labels, providerID, capacity, Launched) and its node registers
when its fate says (the NodeClaim's labels and taints, Registered, Initialized, Ready, nodeName);
a capacity failure or a node class that is not ready deletes the NodeClaim (never Launched=False)
and the offering is cached unavailable for 3 minutes; any other launch error leaves
Launched=Unknown and is retried; a NodeClaim made from a NodePool lists every compatible type
price-ordered and no zone unless asked; expiry deletes after expireAfter (Never never); a Spot
interruption marks the offering unavailable and deletes the NodeClaim, and the finalizer (memory)
or the orphan sweep (the sandbox, no finalizer) takes its node."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

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
    KarpenterNodePool,
    KarpenterRequirement,
    NodeClassReference,
)
from gpupool.core.model.node import GPUNode
from gpupool.core.quantity import Quantity
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

    def karpenter(self, config: FatesConfig, **options: Any) -> SimulatedKarpenter:
        return SimulatedKarpenter(
            self.kubelet, CloudFates(config), clock=self.clock, region="us-east-1", **options
        )

    def nodeclaim(self) -> KarpenterNodeClaim | None:
        return self.store.get(KarpenterNodeClaim, NAME)


def _nodeclaim(capacity_type: str = "on-demand") -> KarpenterNodeClaim:
    pinned = {KEY_INSTANCE_TYPE: "g4dn.xlarge", KEY_ZONE: "us-east-1a", KEY_CAPACITY_TYPE: capacity_type}
    return KarpenterNodeClaim(
        metadata=ObjectMeta(name=NAME, labels={LABEL_NODE_PROVISIONER: NAME, "team": "ml"}),
        spec=KarpenterNodeClaimSpec(
            node_class_ref=NodeClassReference(group="karpenter.k8s.aws", kind="EC2NodeClass", name="default"),
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
        ("Ready", "True"),
    ]
    assert {k: nodeclaim.metadata.labels[k] for k in (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_CAPACITY_TYPE)} == {
        KEY_INSTANCE_TYPE: "g4dn.xlarge",
        KEY_ZONE: "us-east-1a",
        KEY_CAPACITY_TYPE: "on-demand",
    }, "what was launched, in the labels"
    assert nodeclaim.status.capacity["nvidia.com/gpu"] == Quantity(1)
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


def test_a_capacity_failure_deletes_the_nodeclaim_and_caches_the_offering(cluster: Cluster) -> None:
    karpenter = cluster.karpenter(FatesConfig.fixed())
    karpenter.insufficient_capacity("g4dn.xlarge", "us-east-1a")
    cluster.store.create(_nodeclaim())
    (failed,) = karpenter.launch()
    assert (failed.change, failed.detail) == (
        "insufficient-capacity",
        "InsufficientCapacity (g4dn.xlarge/us-east-1a/OnDemand): deleted",
    )
    left = cluster.nodeclaim()
    assert left is None or left.metadata.deletion_timestamp is not None, "deleted at once"
    assert left is None or all(c.type != "Launched" for c in left.status.conditions), "no Launched=False"
    list(karpenter.finalize())
    assert cluster.nodeclaim() is None
    assert karpenter.unavailable() == {"g4dn.xlarge/us-east-1a/OnDemand": 180.0}
    cluster.clock.advance(timedelta(minutes=3))
    assert karpenter.unavailable() == {}


def test_a_nodeclaim_with_many_types_launches_on_the_cheapest_available_one(cluster: Cluster) -> None:
    karpenter = cluster.karpenter(FatesConfig.fixed())
    karpenter.insufficient_capacity("g4dn.xlarge", "us-east-1a")
    many = _nodeclaim().model_copy(
        update={
            "spec": _nodeclaim().spec.model_copy(
                update={
                    "requirements": [
                        KarpenterRequirement(
                            key=KEY_INSTANCE_TYPE, operator="In", values=["g5.xlarge", "g4dn.xlarge"]
                        ),
                        KarpenterRequirement(
                            key=KEY_ZONE, operator="In", values=["us-east-1a", "us-east-1b"]
                        ),
                    ]
                }
            )
        }
    )
    cluster.store.create(many)
    (launched,) = karpenter.launch()
    assert launched.offering == "g4dn.xlarge/us-east-1b/OnDemand", (
        "the cheapest type, in a zone with capacity"
    )


@pytest.mark.parametrize("how", ["node class", "other error"])
def test_a_missing_node_class_deletes_the_nodeclaim_and_another_error_leaves_launched_unknown(
    cluster: Cluster, how: str
) -> None:
    if how == "node class":
        karpenter = cluster.karpenter(FatesConfig.fixed(), node_class_ready=lambda ref: False)
    else:
        karpenter = cluster.karpenter(FatesConfig.fixed())
        karpenter.launch_error("g4dn.xlarge", "us-east-1a", "UnauthorizedOperation")
    cluster.store.create(_nodeclaim())
    (change,) = karpenter.launch()
    if how == "node class":
        assert change.change == "node-class-not-ready"
        list(karpenter.finalize())
        assert cluster.nodeclaim() is None
        return
    assert change.change == "launch-error"
    kept = cluster.nodeclaim()
    assert kept is not None and [(c.type, c.status, c.reason) for c in kept.status.conditions] == [
        ("Launched", "Unknown", "UnauthorizedOperation")
    ]
    karpenter.launch_error("g4dn.xlarge", "us-east-1a", None)
    assert [c.change for c in karpenter.launch()] == ["launched"], "retried at the next pass"


def test_a_nodeclaim_made_from_a_nodepool_lists_every_compatible_type_by_price_and_no_zone(
    cluster: Cluster,
) -> None:
    karpenter = cluster.karpenter(FatesConfig.fixed())
    nodepool = KarpenterNodePool.model_validate(
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"team": "ml"}},
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "default",
                        },
                        "requirements": [
                            {
                                "key": "karpenter.k8s.aws/instance-family",
                                "operator": "In",
                                "values": ["g4dn", "g5"],
                            },
                            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        ],
                        "taints": [TAINT.model_dump()],
                    },
                }
            },
        }
    )
    made = karpenter.provision(nodepool)
    nodeclaim = cluster.store.get(KarpenterNodeClaim, made.nodeclaim)
    assert nodeclaim is not None and made.nodeclaim.startswith("gpu-")
    requirements = {r.key: r.values for r in nodeclaim.spec.requirements}
    types = requirements[KEY_INSTANCE_TYPE]
    assert len(types) > 2 and {t.split(".")[0] for t in types} == {"g4dn", "g5"}
    catalog = load_catalog("aws")
    prices = [catalog.prices("us-east-1", t)["on-demand"] for t in types]
    assert prices == sorted(prices), "price-ordered"
    assert KEY_ZONE not in requirements, "no zone unless the NodePool or the pods ask"
    assert requirements["karpenter.sh/nodepool"] == ["gpu"] and requirements[KEY_CAPACITY_TYPE] == [
        "on-demand"
    ]
    assert nodeclaim.metadata.labels == {"team": "ml", "karpenter.sh/nodepool": "gpu"}
    assert nodeclaim.spec.expire_after == "720h", "the CRD's default, as the NodePool sets none"
    (launched,) = karpenter.launch()
    assert launched.offering.startswith(f"{types[0]}/us-east-1")
    assert karpenter.provision(nodepool, zone="us-east-1c").nodeclaim != made.nodeclaim


def test_expiry_deletes_a_nodeclaim_after_expire_after_whatever_do_not_disrupt_says(cluster: Cluster) -> None:
    karpenter = cluster.karpenter(FatesConfig.fixed())
    protected = _nodeclaim().model_copy(
        update={
            "metadata": _nodeclaim().metadata.model_copy(
                update={"annotations": {"karpenter.sh/do-not-disrupt": "true"}}
            ),
            "spec": _nodeclaim().spec.model_copy(update={"expire_after": "1h"}),
        }
    )
    cluster.store.create(protected)
    never = _nodeclaim().model_copy(
        update={
            "metadata": _nodeclaim().metadata.model_copy(update={"name": "pool-a-0002"}),
            "spec": _nodeclaim().spec.model_copy(update={"expire_after": "Never"}),
        }
    )
    cluster.store.create(never)
    karpenter.launch()
    list(karpenter.progress())
    cluster.clock.advance(timedelta(minutes=59))
    assert [c.change for c in karpenter.progress()] == []
    cluster.clock.advance(timedelta(minutes=1))
    assert [(c.change, c.nodeclaim) for c in karpenter.progress()] == [("expired", NAME)]
    cluster.clock.advance(timedelta(days=400))
    assert [c.change for c in karpenter.progress()] == [], "Never never expires"


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
    assert list(karpenter.unavailable()) == ["g4dn.xlarge/us-east-1a/Spot"], "the interrupted offering"
    changes = karpenter.step()
    left = [c.node for c in changes if c.change in ("finalized", "node-removed")]
    assert left == [registered.node], "Karpenter's finalizer (or, without one, its orphan sweep)"
    assert cluster.nodeclaim() is None and cluster.store.get(Node, registered.node or "") is None


def _gpu_nodepool(**spec: Any) -> KarpenterNodePool:
    return KarpenterNodePool.model_validate(
        {
            "metadata": {"name": "gpu", "uid": "np-1"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"nvidia.com/gpu.present": "true"}},
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "default",
                        },
                        "requirements": [
                            {"key": KEY_INSTANCE_TYPE, "operator": "In", "values": ["g4dn.xlarge"]},
                            {"key": KEY_CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                        ],
                    },
                },
                **spec,
            },
        }
    )


def test_the_nodeclaims_annotations_reach_its_node_and_a_foreign_one_gets_no_template_labels(
    cluster: Cluster,
) -> None:
    """Karpenter copies a NodeClaim's annotations (do-not-disrupt among them) onto the Node at
    registration, and adds no NodePool template metadata to a NodeClaim it did not make."""
    karpenter = cluster.karpenter(FatesConfig.fixed())
    guarded = _nodeclaim().model_copy(
        update={
            "metadata": _nodeclaim().metadata.model_copy(
                update={"annotations": {"karpenter.sh/do-not-disrupt": "true", "owner": "ml"}}
            )
        }
    )
    cluster.store.create(guarded)
    changes = karpenter.step([_gpu_nodepool()]) + karpenter.step([_gpu_nodepool()])
    (registered,) = [c for c in changes if c.change == "registered"]
    node = cluster.store.get(Node, registered.node or "")
    assert node is not None and node.metadata.annotations["karpenter.sh/do-not-disrupt"] == "true"
    assert node.metadata.annotations["owner"] == "ml"
    nodeclaim = cluster.nodeclaim()
    assert nodeclaim is not None and "nvidia.com/gpu.present" not in nodeclaim.metadata.labels


def test_an_empty_node_without_do_not_disrupt_is_consolidated_after_consolidate_after(
    cluster: Cluster,
) -> None:
    karpenter = cluster.karpenter(FatesConfig.fixed())
    nodepool = _gpu_nodepool(disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"})
    made = karpenter.provision(nodepool).nodeclaim
    nodeclaim = cluster.store.get(KarpenterNodeClaim, made)
    assert nodeclaim is not None and nodeclaim.metadata.owner_references[0].name == "gpu"
    cluster.store.create(
        _nodeclaim().model_copy(
            update={
                "metadata": _nodeclaim().metadata.model_copy(
                    update={
                        "annotations": {"karpenter.sh/do-not-disrupt": "true"},
                        "labels": {"karpenter.sh/nodepool": "gpu"},
                    }
                )
            }
        )
    )
    karpenter.step([nodepool])  # launched
    assert [c.change for c in karpenter.step([nodepool]) if c.change == "consolidated"] == []  # registered
    cluster.clock.advance(timedelta(seconds=29))
    assert [c.change for c in karpenter.step([nodepool]) if c.change == "consolidated"] == []
    cluster.clock.advance(timedelta(seconds=1))
    consolidated = [c.nodeclaim for c in karpenter.step([nodepool]) if c.change == "consolidated"]
    assert consolidated == [made], "the guarded one stays"
    assert cluster.store.get(KarpenterNodeClaim, made) is None


def test_its_own_provisioning_stops_at_the_nodepools_limits(cluster: Cluster) -> None:
    karpenter = cluster.karpenter(FatesConfig.fixed())
    nodepool = _gpu_nodepool(limits={"nvidia.com/gpu": "1"})
    assert karpenter.provision(nodepool).change == "provisioned"
    karpenter.launch()
    refused = karpenter.provision(nodepool)
    assert refused.change == "limited" and "nvidia.com/gpu: 1" in refused.detail
