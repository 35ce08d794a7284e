"""Karpenter mode where the real Karpenter (its KWOK provider) launches gpupool's NodeClaims.

Covers, in order (one story): a Karpenter-mode pool whose karpenterNodeClassRef is the
KWOKNodeClass; the deployed launch handler records a GPUNodeClaim and creates its NodeClaim, which
the real API server accepts (Karpenter's own CRD and CEL rules) and the real Karpenter launches
into a KWOK node that registers with the NodeClaim's labels; once the node agent's GPUNode runs on
it, bind binds the claim; when Karpenter itself deletes the NodeClaim (its expiration controller,
after the pool's `gpupool.io/karpenter-expire-after`), bind sees it — the claim fails with
`InstanceTerminated` — and the next launch refills the gap with a new NodeClaim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gpupool.core.model.constants import LABEL_NODE_PROVISIONER
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.functions_world import FunctionsWorld, functions_world, publish_gpu_node, wait_for
from tests.real.karpenter_builders import KWOK_NODE_CLASS_REF, ensure_kwok_node_class, pool_manifests

CLUSTER = "karp-story"
POOL = f"{CLUSTER}-gpus"
EXPIRE_AFTER_S = 90
NODE_CLASS_REF = {**KWOK_NODE_CLASS_REF, "version": "v1alpha1"}
POOL_SPEC: dict[str, Any] = {
    "capacityConfig": {"minResources": {"tflops": "65", "vram": "16Gi"}},
    "nodeManagerConfig": {
        "provisioningMode": "Karpenter",
        "nodeProvisioner": {
            "karpenterNodeClassRef": NODE_CLASS_REF,
            "gpuRequirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["OnDemand"]},
            ],
            "gpuNodeLabels": {"nvidia.com/gpu.present": "true"},
        },
    },
}


def _manifests() -> list[dict[str, Any]]:
    # The pool exists before the cluster's sync would make it, with the annotation that asks
    # Karpenter to expire its nodes (the sync keeps annotations others set).
    expire = {"gpupool.io/karpenter-expire-after": f"{EXPIRE_AFTER_S}s"}
    return pool_manifests(CLUSTER, "gpus", POOL_SPEC, pool_annotations=expire)


@pytest.fixture(scope="module")
def world(control_plane: ControlPlane) -> Iterator[FunctionsWorld]:
    ensure_kwok_node_class(control_plane)
    with functions_world(control_plane, cluster=CLUSTER, manifests=_manifests()) as made:
        yield made


def _nodeclaim(world: FunctionsWorld, name: str) -> dict[str, Any] | None:
    for found in world.plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]:
        if found["metadata"]["name"] == name:
            return dict(found)
    return None


def _node_for(world: FunctionsWorld, claim: str) -> dict[str, Any] | None:
    selector = f"{LABEL_NODE_PROVISIONER}={claim}"
    items = world.plane.request("GET", f"/api/v1/nodes?labelSelector={selector}")["items"]
    for node in items:
        conditions = node.get("status", {}).get("conditions") or []
        if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return dict(node)
    return None


def test_karpenter_launches_gpupools_nodeclaims_and_gpupool_sees_karpenter_delete_one(
    world: FunctionsWorld,
) -> None:
    world.invoke("launch")
    phases = world.phases(POOL)
    assert len(phases) == 1, phases
    (claim,) = phases
    nodeclaim = _nodeclaim(world, claim)
    assert nodeclaim is not None, "launch created no NodeClaim"
    assert nodeclaim["spec"]["nodeClassRef"] == {
        "group": "karpenter.kwok.sh",
        "kind": "KWOKNodeClass",
        "name": "default",
    }
    # gpupool writes durations as TensorFusion normalises them: 90s reads back as 1m30s.
    assert nodeclaim["spec"]["expireAfter"] == "1m30s"
    assert nodeclaim["metadata"]["labels"][LABEL_NODE_PROVISIONER] == claim

    # The real Karpenter launches it (KWOK provider); the node registers with the claim's labels.
    node = wait_for(
        "Karpenter's node for the claim to be Ready", lambda: _node_for(world, claim), timeout=120
    )
    labels = node["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == "g4dn.xlarge"
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    assert labels["nvidia.com/gpu.present"] == "true"
    launched = _nodeclaim(world, claim)
    assert launched is not None
    assert launched["status"]["providerID"] == node["spec"]["providerID"]

    publish_gpu_node(world, node, pool=POOL)
    world.invoke("bind")
    claim_object = next(c for c in world.claims(POOL) if c["metadata"]["name"] == claim)
    assert claim_object["status"]["phase"] == "Bound", claim_object["status"]
    assert claim_object["status"]["instanceID"] == f"nodeclaim/{claim}"

    # Karpenter's expiration controller deletes the NodeClaim (and its node); gpupool sees it.
    wait_for(
        "Karpenter to delete the expired NodeClaim",
        lambda: (found := _nodeclaim(world, claim)) is None or found["metadata"].get("deletionTimestamp"),
        timeout=EXPIRE_AFTER_S + 90,
        every=3,
    )
    world.invoke("bind")
    failed = next(c for c in world.claims(POOL) if c["metadata"]["name"] == claim)
    assert failed["status"]["phase"] == "Failed", failed["status"]
    assert "InstanceTerminated" in str(failed["status"]), failed["status"]

    world.invoke("launch")
    refills = [name for name, phase in world.phases(POOL).items() if name != claim and phase != "Failed"]
    assert len(refills) == 1, world.phases(POOL)
    assert _nodeclaim(world, refills[0]) is not None
