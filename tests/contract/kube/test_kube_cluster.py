"""KubeCluster against the embedded API server: tensor-fusion.ai objects, nodes and pods.

Covers: reads come back as models with resourceVersion; claims are created with their
finalizer; status goes through the status subresource with optimistic concurrency (stale →
Conflict); metadata merge patches; deletion waits for the finalizer; pool spec replace and
annotation patch; node labels and cordon; pod listing by node and by worker labels; not found
and already exists.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.core.model.constants import FINALIZER
from gpupool.core.model.nodeclaim import GPUNodeClaimStatus
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.quantity import Quantity
from gpupool.service.errors import AlreadyExists, Conflict, NotFound
from gpupool.service.ports import ClaimMetadataPatch, NodePatch

from .conftest import make_claim, make_pool


def test_claim_is_created_with_its_finalizer_and_read_back(cluster: KubeCluster) -> None:
    created = cluster.create_claim(make_claim(finalizers=[FINALIZER]))
    assert created.metadata.uid and created.metadata.resource_version
    assert created.metadata.finalizers == [FINALIZER]
    fetched = cluster.get_claim("pool-a-x1")
    assert fetched.spec.instance_type == "g5.xlarge"
    assert fetched.spec.vram_offered == Quantity.parse("24Gi")
    assert [claim.name for claim in cluster.list_claims()] == ["pool-a-x1"]
    with pytest.raises(AlreadyExists):
        cluster.create_claim(make_claim(finalizers=[FINALIZER]))


def test_claim_status_uses_the_status_subresource_and_resource_version(cluster: KubeCluster) -> None:
    created = cluster.create_claim(make_claim())
    version = created.metadata.resource_version or ""
    updated = cluster.update_claim_status(
        "pool-a-x1", GPUNodeClaimStatus(phase="Creating", instance_id="i-0abc"), resource_version=version
    )
    assert updated.status is not None and updated.status.phase == "Creating"
    assert updated.status.instance_id == "i-0abc"
    assert updated.metadata.resource_version != version
    with pytest.raises(Conflict):  # the version this writer read is stale now
        cluster.update_claim_status("pool-a-x1", GPUNodeClaimStatus(phase="Failed"), resource_version=version)
    current = cluster.get_claim("pool-a-x1")
    assert current.status is not None and current.status.phase == "Creating"
    assert current.spec.instance_type == "g5.xlarge"  # status writes leave the spec alone


def test_two_writers_with_one_version_only_one_wins(cluster: KubeCluster) -> None:
    version = cluster.create_claim(make_claim()).metadata.resource_version or ""
    cluster.update_claim_status("pool-a-x1", GPUNodeClaimStatus(phase="Creating"), resource_version=version)
    with pytest.raises(Conflict):
        cluster.patch_claim_metadata(
            "pool-a-x1", ClaimMetadataPatch(labels={"x": "y"}, resource_version=version)
        )
    assert "x" not in cluster.get_claim("pool-a-x1").metadata.labels


def test_metadata_patch_sets_removes_and_replaces_finalizers(cluster: KubeCluster) -> None:
    created = cluster.create_claim(make_claim(annotations={"keep": "1", "drop": "2"}, finalizers=[FINALIZER]))
    patched = cluster.patch_claim_metadata(
        "pool-a-x1",
        ClaimMetadataPatch(
            labels={"new": "label"},
            annotations={"drop": None},
            finalizers=(),
            resource_version=created.metadata.resource_version or "",
        ),
    )
    assert patched.metadata.labels["new"] == "label"
    assert patched.metadata.labels["tensor-fusion.ai/managed-by"] == "pool-a"
    assert patched.metadata.annotations == {"keep": "1"}
    assert patched.metadata.finalizers == []


def test_delete_waits_for_the_finalizer(cluster: KubeCluster) -> None:
    cluster.create_claim(make_claim(finalizers=[FINALIZER]))
    cluster.delete_claim("pool-a-x1")
    cluster.delete_claim("pool-a-x1")  # already deleting: fine
    deleting = cluster.get_claim("pool-a-x1")
    assert deleting.metadata.deletion_timestamp is not None
    assert [claim.name for claim in cluster.list_claims()] == ["pool-a-x1"]
    cluster.patch_claim_metadata(
        "pool-a-x1",
        ClaimMetadataPatch(finalizers=(), resource_version=deleting.metadata.resource_version or ""),
    )
    with pytest.raises(NotFound):
        cluster.get_claim("pool-a-x1")
    with pytest.raises(NotFound):
        cluster.delete_claim("pool-a-x1")


def test_pool_spec_replace_annotations_and_status(cluster: KubeCluster) -> None:
    created = cluster.create_pool(make_pool())
    assert [pool.name for pool in cluster.list_pools()] == ["pool-a"]
    status_version = cluster.update_pool_status(
        "pool-a",
        GPUPoolStatus(phase="Running", total_nodes=2),
        resource_version=created.metadata.resource_version or "",
    ).metadata.resource_version
    with pytest.raises(Conflict):
        cluster.update_pool_status(
            "pool-a", GPUPoolStatus(phase="Pending"), resource_version=created.metadata.resource_version or ""
        )
    changed = make_pool(capacityConfig={"minResources": {"tflops": "100", "vram": "48Gi"}})
    replaced = cluster.replace_pool_spec(changed, resource_version=status_version or "")
    assert replaced.spec.capacity_config is not None
    assert replaced.status is not None and replaced.status.total_nodes == 2  # status untouched
    with pytest.raises(Conflict):
        cluster.replace_pool_spec(changed, resource_version=status_version or "")
    annotated = cluster.patch_pool_annotations(
        "pool-a",
        {"tensor-fusion.ai/manual-compaction": "2026-11-29T12:00:00Z"},
        resource_version=replaced.metadata.resource_version or "",
    )
    assert annotated.metadata.annotations["tensor-fusion.ai/manual-compaction"] == "2026-11-29T12:00:00Z"
    cleared = cluster.patch_pool_annotations(
        "pool-a",
        {"tensor-fusion.ai/manual-compaction": None},
        resource_version=annotated.metadata.resource_version or "",
    )
    assert "tensor-fusion.ai/manual-compaction" not in cleared.metadata.annotations
    assert cluster.get_pool("pool-a").metadata.resource_version == cleared.metadata.resource_version
    with pytest.raises(NotFound):
        cluster.get_pool("no-such-pool")
    with pytest.raises(AlreadyExists):
        cluster.create_pool(make_pool())


def _seed_nodes_and_pods(api_client: Any) -> None:
    core = k8s.CoreV1Api(api_client)
    for node in ("gpu-1", "gpu-2"):
        core.create_node(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {"old": "x"}}}
        )
    worker = {"tensor-fusion.ai/enabled": "true", "tensor-fusion.ai/component": "worker"}
    for name, node, labels in (("w1", "gpu-1", worker), ("plain", "gpu-1", {}), ("w2", "gpu-2", worker)):
        core.create_namespaced_pod(
            "default",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": labels},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
            },
        )


def test_nodes_and_pods_are_listed_with_selectors(cluster: KubeCluster, api_client: Any) -> None:
    _seed_nodes_and_pods(api_client)
    assert sorted(node.name for node in cluster.list_nodes()) == ["gpu-1", "gpu-2"]
    assert sorted(pod.name for pod in cluster.list_pods()) == ["plain", "w1", "w2"]
    assert sorted(pod.name for pod in cluster.list_pods(node_name="gpu-1")) == ["plain", "w1"]
    assert [pod.name for pod in cluster.list_pods(node_name="gpu-2", phase="Pending")] == ["w2"]
    assert [pod.name for pod in cluster.list_pods(node_name="")] == []
    assert [node.name for node in cluster.list_nodes(labels={"old": "x"})] == ["gpu-1", "gpu-2"]
    assert cluster.list_nodes(labels={"old": "y"}) == []


def test_patch_node_labels_and_cordon(cluster: KubeCluster, api_client: Any) -> None:
    _seed_nodes_and_pods(api_client)
    cluster.patch_node(
        "gpu-1", NodePatch(labels={"tensor-fusion.ai/should-delete": "true", "old": None}, unschedulable=True)
    )
    node = next(node for node in cluster.list_nodes() if node.name == "gpu-1")
    assert node.metadata.labels == {"tensor-fusion.ai/should-delete": "true"}
    assert node.spec.unschedulable is True
    other = next(node for node in cluster.list_nodes() if node.name == "gpu-2")
    assert other.spec.unschedulable is False
    with pytest.raises(NotFound):
        cluster.patch_node("missing", NodePatch(unschedulable=True))


def test_empty_lists_and_other_kinds(cluster: KubeCluster) -> None:
    assert cluster.list_clusters() == []
    assert cluster.list_node_classes() == []
    assert cluster.list_gpu_nodes() == []
    assert cluster.list_gpus() == []
