"""Provisioned mode on moto's EC2 against the real API server: the deployed launch, bind and compact
handlers, each instance gpupool launches turned into a KWOK node by a small "cloud → node" joiner.

Covers, in order (one story): launch records GPUNodeClaims the real API server accepts and runs
their instances in moto (tagged for their claims, userData naming them); each running instance
registers a Node with the labels its userData gives, annotated for KWOK, which keeps it Ready with
a heartbeat Lease; bind binds every claim; a spike that takes every GPU makes launch add a node for
the warm reserve; once the spike is over and the clock stands past the 5-minute protection (the
wiring's `clock=` seam; the API server stamps real creation times), compact deletes one idle
claim, bind terminates its instance and releases it, and its node goes with the instance, leaving
the pool at its minimum.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal

import pytest

from gpupool.core.model.constants import LABEL_NODE_PROVISIONER
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.functions_world import CloudToNode, FunctionsWorld, functions_world, wait_for

CLUSTER = "prov-story"
POOL = f"{CLUSTER}-elastic"
NODE_CLASS = "prov-story-nodes"


def _manifests() -> list[dict[str, object]]:
    from gpupool.sandbox.demo.world import demo_manifests

    cluster, node_class = (
        next(m for m in demo_manifests("aws") if m["kind"] == kind)
        for kind in ("TensorFusionCluster", "GPUNodeClass")
    )
    cluster["metadata"]["name"] = CLUSTER
    node_class["metadata"]["name"] = NODE_CLASS
    pool = cluster["spec"]["gpuPools"][0]
    pool["specTemplate"]["nodeManagerConfig"]["nodeProvisioner"]["nodeClass"] = NODE_CLASS
    return [node_class, cluster]


@pytest.fixture(scope="module")
def world(control_plane: ControlPlane) -> Iterator[FunctionsWorld]:
    with functions_world(control_plane, cluster=CLUSTER, manifests=_manifests()) as made:
        yield made


def _node(world: FunctionsWorld, name: str) -> dict[str, object]:
    found: dict[str, object] = world.plane.request("GET", f"/api/v1/nodes/{name}")
    return found


def _lease_holder(world: FunctionsWorld, node: str) -> str | None:
    try:
        lease = world.plane.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"
        )
    except urllib.error.HTTPError:
        return None
    return str(lease["spec"].get("holderIdentity") or "") or None


def _ready(node: dict[str, object]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []  # type: ignore[attr-defined]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_launch_join_bind_then_compact_after_the_protection(world: FunctionsWorld) -> None:
    joiner = CloudToNode(world)

    world.invoke("launch")
    claims = world.phases(POOL)
    assert len(claims) == 2, claims  # the minimum: 2 × T4 worth
    instances = wait_for(
        "two running instances", lambda: len(world.live_instances()) == 2 and world.live_instances()
    )
    assert {i.claim_name for i in instances} == set(claims)

    wait_for("the joiner to register both nodes", lambda: (joiner.step(), len(joiner.joined) == 2)[1])
    joined = dict(joiner.joined)
    for name in joined.values():
        node = _node(world, name)
        labels = node["metadata"]["labels"]  # type: ignore[index]
        assert labels[LABEL_NODE_PROVISIONER] in claims  # from the userData's --node-labels
        assert labels["nvidia.com/gpu.present"] == "true"
        # KWOK runs this node: it keeps it Ready past the node controller's grace period.
        wait_for(f"KWOK's heartbeat Lease for {name}", lambda name=name: _lease_holder(world, name))

    world.invoke("bind")
    assert set(world.phases(POOL).values()) == {"Bound"}, world.phases(POOL)

    # A spike takes every GPU: below warm, launch adds one node, which joins and binds.
    for name in joined.values():
        joiner.report_usage(name, Decimal(0))
    world.invoke("launch")
    assert len(world.phases(POOL)) == 3, world.phases(POOL)
    wait_for(
        "the third instance to run",
        lambda: len([i for i in world.live_instances() if i.state == "running"]) == 3,
    )
    wait_for("the third node", lambda: (joiner.step(), len(joiner.joined) == 3)[1])
    world.invoke("bind")
    assert list(world.phases(POOL).values()).count("Bound") == 3, world.phases(POOL)

    # The spike ends; compaction keeps every node inside the 5-minute protection...
    for name in joiner.joined.values():
        joiner.report_usage(name, Decimal(1))
    world.invoke("compact")
    assert len(world.phases(POOL)) == 3

    # ...and after it removes exactly one (the pool's minimum is two nodes).
    world.clock.ahead = timedelta(minutes=6)
    world.invoke("compact")
    deleting = [c["metadata"]["name"] for c in world.claims(POOL) if c["metadata"].get("deletionTimestamp")]
    assert len(deleting) == 1, world.phases(POOL)
    # bind cordons and drains its node, terminates its instance and releases the claim.
    wait_for(
        "the compacted claim to go",
        lambda: (world.invoke("bind"), deleting[0] not in world.phases(POOL))[1],
        timeout=60,
        every=2,
    )
    wait_for("two instances left", lambda: len(world.live_instances()) == 2, timeout=60)
    joiner.step()
    assert len(joiner.joined) == 2
    nodes = world.plane.request("GET", "/api/v1/nodes")["items"]
    ours = [n for n in nodes if n["metadata"]["labels"].get(LABEL_NODE_PROVISIONER, "").startswith(POOL)]
    assert len(ours) == 2 and all(_ready(n) for n in ours)
    assert set(world.phases(POOL).values()) == {"Bound"}
