"""Discovery against the embedded API server, and the relay's scheduler reading what it wrote.

Eight fake GPUs become eight GPU objects (TensorFusion's fields) and the GPUNode's totals; the
relay (its watches and allocator) places an 8-GPU pod on them. Then one GPU disappears from the
driver and another reports an Xid: both are marked unusable (`tensor-fusion.ai/gpu-missing-since`,
phase Unknown, a Warning Event), the GPUNode totals drop, and the relay stops placing on them.
When they come back the mark is lifted. The Kubernetes adapter's other calls (pods by node,
Events, eviction, the pool label) are checked against the same server.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from gpupool.core.allocator.pod_request import RequestError
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool_incluster.agent.kube import KubeAgentCluster
from gpupool_incluster.agent.nvml_fake import FakeNvml
from gpupool_incluster.agent.runner import Agent, AgentOptions
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.kube import KubeWriter, start_watches

sys.path.insert(0, str(Path(__file__).parent))
from agent_builders import T, wait_for, write_fake_nvml

G, V = "tensor-fusion.ai", "v1"
MISSING = T + "gpu-missing-since"


def gpu_name(index: int) -> str:
    return f"gpu-{index:08x}-1111-2222-3333-444444444444"


@pytest.fixture
def sandbox() -> Iterator[Any]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        pool = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "metadata": {"name": "shared", "annotations": {T + "is-default-pool": "true"}},
            "spec": {},
        }
        client.CustomObjectsApi(api_client).create_cluster_custom_object(G, V, "gpupools", pool)
        try:
            yield api_client
        finally:
            api_client.close()


def _pod(count: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p{count}",
            "namespace": "default",
            "labels": {T + "enabled": "true"},
            "annotations": {
                T + "tflops-request": "10",
                T + "vram-request": "1Gi",
                T + "gpu-count": str(count),
            },
        },
        "spec": {"containers": [{"name": "c", "image": "cuda"}]},
    }


def _placed(hub: SchedulerHub, count: int) -> list[str]:
    try:
        return sorted(hub.simulate(_pod(count), "default")[1].gpus)
    except RequestError:
        return []


def test_eight_gpus_published_then_a_lost_one_is_marked_and_avoided(sandbox: Any, tmp_path: Path) -> None:
    api_client = sandbox
    custom = client.CustomObjectsApi(api_client)
    nvml_file = tmp_path / "nvml.json"
    write_fake_nvml(nvml_file, gpus=8)
    now = [datetime(2026, 12, 1, 2, 0, tzinfo=UTC)]
    agent = Agent(
        AgentOptions(node="node-a", pool="shared", guardian=False),
        nvml=FakeNvml(nvml_file),
        cluster=KubeAgentCluster(api_client),
        clock=lambda: now[0],
    )
    try:
        agent.run_slow_once()
        gpus = custom.list_cluster_custom_object(G, V, "gpus")["items"]
        assert sorted(g["metadata"]["name"] for g in gpus) == [gpu_name(i) for i in range(8)]
        first = next(g for g in gpus if g["metadata"]["name"] == gpu_name(0))
        assert first["metadata"]["labels"] == {T + "gpupool": "shared", "kubernetes.io/hostname": "node-a"}
        status = first["status"]
        assert (status["phase"], status["gpuModel"], status["index"], status["numaNode"]) == (
            "Running",
            "A100",
            0,
            0,
        )
        assert status["capacity"] == {"tflops": "312", "vram": "40Gi"} and status["uuid"].startswith("GPU-")
        assert (
            status["nodeSelector"] == {"kubernetes.io/hostname": "node-a"}
            and status["usedBy"] == "tensor-fusion"
        )
        node = custom.get_cluster_custom_object(G, V, "gpunodes", "node-a")["status"]
        assert (node["totalTFlops"], node["totalVRAM"], node["totalGPUs"], node["managedGPUs"]) == (
            "2496", "320Gi", 8, 8,
        )  # fmt: skip
        assert node["phase"] == "Running" and node["nodeInfo"]["gpuModel"] == "A100"

        hub = SchedulerHub(KubeWriter(api_client))
        stop = threading.Event()
        start_watches(api_client, hub, stop)
        try:
            assert hub.synced.wait(10)
            assert _placed(hub, 8) == [gpu_name(i) for i in range(8)]

            now[0] += timedelta(minutes=1)
            write_fake_nvml(nvml_file, gpus=[0, 1, 2, 4, 5, 6, 7], health={5: "Xid 79: fallen off the bus"})
            agent.run_slow_once()
            lost = custom.get_cluster_custom_object(G, V, "gpus", gpu_name(3))
            assert lost["metadata"]["annotations"][MISSING] == "2026-12-01T02:01:00Z"
            assert lost["status"]["phase"] == "Unknown" and "no longer listed" in lost["status"]["message"]
            failed = custom.get_cluster_custom_object(G, V, "gpus", gpu_name(5))
            assert (
                failed["status"]["message"] == "Xid 79: fallen off the bus"
                and MISSING in failed["metadata"]["annotations"]
            )
            node = custom.get_cluster_custom_object(G, V, "gpunodes", "node-a")["status"]
            assert (node["totalTFlops"], node["managedGPUs"], node["totalGPUs"]) == ("1872", 6, 8)
            events = client.CoreV1Api(api_client).list_namespaced_event("default").items
            unusable = sorted(e.involved_object.name for e in events if e.reason == "GPUUnusable")
            assert unusable == [gpu_name(3), gpu_name(5)] and {e.type for e in events} == {"Warning"}

            healthy = [gpu_name(i) for i in (0, 1, 2, 4, 6, 7)]
            wait_for(lambda: _placed(hub, 6) == healthy, "the relay to see the unusable GPUs")
            assert _placed(hub, 7) == []

            write_fake_nvml(nvml_file, gpus=8)
            agent.run_slow_once()
            back = custom.get_cluster_custom_object(G, V, "gpus", gpu_name(3))
            assert (
                MISSING not in (back["metadata"].get("annotations") or {})
                and back["status"]["phase"] == "Running"
            )
            wait_for(lambda: len(_placed(hub, 8)) == 8, "the relay to place on all eight again")
        finally:
            stop.set()
    finally:
        agent.close()


def test_kube_adapter_evicts_records_events_and_reads_the_pool(sandbox: Any) -> None:
    api_client = sandbox
    core = client.CoreV1Api(api_client)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hog", "namespace": "default"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "cuda"}]},
    }
    core.create_namespaced_pod("default", body)
    cluster = KubeAgentCluster(api_client)
    assert [p.metadata.name for p in cluster.node_pods("node-a")] == ["hog"]
    assert cluster.node_pods("node-b") == []
    involved = {"apiVersion": "v1", "kind": "Pod", "name": "hog", "namespace": "default"}
    cluster.record_event(involved=involved, reason="VRAMLimitExceeded", message="over", kind="Warning")
    events = core.list_namespaced_event("default").items
    assert [(e.reason, e.type, e.involved_object.name) for e in events] == [
        ("VRAMLimitExceeded", "Warning", "hog")
    ]
    with pytest.raises(ApiException) as replaced:  # a uid precondition: never a pod that replaced it
        cluster.evict_pod("default", "hog", uid="00000000-0000-4000-8000-000000000000")
    assert replaced.value.status == 409
    cluster.evict_pod("default", "hog", uid=core.read_namespaced_pod("hog", "default").metadata.uid)
    left = core.list_namespaced_pod("default").items
    assert left == [] or left[0].metadata.deletion_timestamp is not None
    assert cluster.node_pool("node-a") is None
    gpunode = {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUNode", "metadata": {"name": "node-a"}}
    gpunode["metadata"]["labels"] = {T + "pool-training": "true"}  # type: ignore[index]
    client.CustomObjectsApi(api_client).create_cluster_custom_object(G, V, "gpunodes", gpunode)
    assert cluster.node_pool("node-a") == "training"
