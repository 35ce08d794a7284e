"""The real kube-scheduler calling the relay's extender to place TensorFusion pods on KWOK GPU nodes
(issue 31, story 3).

On the session's real control plane: the chart's scheduling RBAC (its two ServiceAccounts, the relay's
ClusterRole, kube-scheduler's bindings and Lease Role) is applied for a release in a namespace of the
test's own; the relay and a second kube-scheduler — the chart's KubeSchedulerConfiguration, its
extender pointed at the relay's extender port, leader election on `tensor-fusion-scheduler` in that
namespace — each run as its own ServiceAccount (`<release>-scheduler`, `<release>-kube-scheduler`)
with a TokenRequest token, so the chart's RBAC is what lets them work, each with its own roles.
Two KWOK nodes carry GPUs published by the node agent's own code (`Publisher` over a
fake NVML, writing GPU objects and GPUNode status through `KubeAgentCluster`). Covers: a TensorFusion
pod is filtered, prioritized and bound by the relay (filter / prioritize / bind called by the real
scheduler), carries the GPU assignment (`tensor-fusion.ai/gpu-ids`, `gpupool.io/allocation` naming
its node and GPUs of that node), and KWOK runs it; a pod no GPU can hold stays Pending with the
extender's reason in its PodScheduled condition; a pod refused while its node had no GPUs yet is
bound as soon as the agent publishes them — the relay's `gpupool.io/usable-gpus` Node label is the
change kube-scheduler hears (it does not watch GPU objects, and would otherwise wait up to its
5-minute unschedulable flush); a GPUPool the relay cannot read is skipped with a Warning Event that
`kubectl describe` shows.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.programs import require_built
from tests.real.karpenter_builders import namespace_with_account, scheduling_pair
from tests.real.relay_process import RelayProcess, call, wait_for
from tests.real.scheduler_process import SchedulerProcess

T = "tensor-fusion.ai/"
GIB = 1024**3
# On the test's nodes and in its pods' nodeSelector: the session's Karpenter cannot launch a node with
# a label no NodePool offers, so a pod left Pending here never makes it launch one.
STORY_LABEL = "gpupool.test/pool"


@dataclass
class Placement:
    plane: ControlPlane
    namespace: str
    pool: str
    nodes: dict[str, list[str]]  # node → its GPU objects' names
    relay: RelayProcess
    scheduler: SchedulerProcess

    @property
    def pods(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"


def kwok_gpu_node(name: str, pool: str) -> dict[str, Any]:
    capacity = {
        "cpu": "32",
        "memory": "256Gi",
        "pods": "110",
        "ephemeral-storage": "500Gi",
        "nvidia.com/gpu": "2",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", STORY_LABEL: pool},
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def publish_gpus(plane: ControlPlane, node: str, pool: str, nvml_file: Path) -> list[str]:
    """Two A100s on `node`, published by the node agent's Publisher as it does each round."""
    from kubernetes import config

    from gpupool_incluster.agent.discovery import gpu_object_name
    from gpupool_incluster.agent.kube import KubeAgentCluster
    from gpupool_incluster.agent.nvml_fake import FakeNvml
    from gpupool_incluster.agent.publish import Publisher

    uuids = [f"GPU-{uuid.uuid4()}" for _ in range(2)]
    nvml_file.write_text(
        json.dumps(
            {
                "driverVersion": "550.54.15",
                "gpus": [
                    {
                        "uuid": u,
                        "name": "NVIDIA A100-SXM4-40GB",
                        "memoryBytes": 40 * GIB,
                        "numaNode": 0,
                        "health": None,
                    }
                    for u in uuids
                ],
                "processes": [],
            }
        )
    )
    api = config.new_client_from_config(config_file=str(plane.kubeconfig))
    try:
        Publisher(node, FakeNvml(nvml_file), KubeAgentCluster(api), pool=pool).publish([], datetime.now(UTC))
    finally:
        api.close()
    return [gpu_object_name(u) for u in uuids]


def tf_pod(name: str, pool: str, *, vram: str = "4Gi") -> dict[str, Any]:
    """A TensorFusion worker as the pod webhook leaves it (test_pod_webhook_real.py shows the webhook)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {T + "enabled": "true"},
            "annotations": {
                T + "tflops-request": "10",
                T + "tflops-limit": "10",
                T + "vram-request": vram,
                T + "vram-limit": vram,
                T + "gpupool": pool,
                T + "qos": "high",
                T + "isolation": "soft",
            },
        },
        "spec": {
            "schedulerName": "tensor-fusion-scheduler",
            "nodeSelector": {STORY_LABEL: pool},
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/cuda:12",
                    "resources": {"limits": {T + "index_0": "1"}},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def placement(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Placement]:
    require_built("kube-scheduler", "kwok")
    plane = control_plane
    root: Path = tmp_path_factory.mktemp("extender")
    suffix = uuid.uuid4().hex[:6]
    namespace, pool = f"sched-{suffix}", f"pool-{suffix}"
    nodes = [f"kwok-gpu-{suffix}-{i}" for i in range(2)]
    with contextlib.ExitStack() as cleanup:  # undone in reverse, whatever failed
        cleanup.enter_context(namespace_with_account(plane, namespace))
        pool_object = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "metadata": {"name": pool},
            "spec": {},
        }
        plane.request("POST", "/apis/tensor-fusion.ai/v1/gpupools", pool_object)
        cleanup.callback(call, plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpupools/{pool}")
        gpus: dict[str, list[str]] = {}
        for node in nodes:
            plane.request("POST", "/api/v1/nodes", kwok_gpu_node(node, pool))
            cleanup.callback(call, plane, "DELETE", f"/api/v1/nodes/{node}")
            cleanup.callback(call, plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpunodes/{node}")
            gpus[node] = publish_gpus(plane, node, pool, root / f"{node}-nvml.json")
            for name in gpus[node]:
                cleanup.callback(call, plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpus/{name}")
        for node in nodes:
            wait_for(
                f"KWOK to make {node} Ready",
                lambda node=node: any(  # type: ignore[misc]
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in plane.request("GET", f"/api/v1/nodes/{node}")["status"].get("conditions") or []
                ),
                timeout=60,
            )
        relay, scheduler = cleanup.enter_context(scheduling_pair(plane, root, namespace=namespace))
        yield Placement(plane, namespace, pool, gpus, relay, scheduler)


def test_the_real_scheduler_places_a_worker_through_the_extender_and_kwok_runs_it(
    placement: Placement,
) -> None:
    plane = placement.plane
    status, created = call(plane, "POST", placement.pods, tf_pod("worker", placement.pool))
    assert status == 201, created
    path = f"{placement.pods}/worker"
    running = wait_for(
        "the pod to be bound and run",
        lambda: (pod := plane.request("GET", path))["status"].get("phase") == "Running" and pod,
        timeout=90,
    )
    node = running["spec"]["nodeName"]
    assert node in placement.nodes
    notes = running["metadata"]["annotations"]
    gpu_ids = notes[T + "gpu-ids"].split(",")
    assert len(gpu_ids) == 1 and gpu_ids[0] in placement.nodes[node]  # a GPU of the node it was bound to
    record = json.loads(notes["gpupool.io/allocation"])
    assert record["node"] == node and record["uid"] == running["metadata"]["uid"]
    calls = placement.relay.log.read_text()
    for verb in ("filter", "prioritize", "bind"):  # the real scheduler called each extender verb
        assert f'"POST /scheduler/{verb} HTTP/1.1" 200' in calls, verb
    bound = f'"Successfully bound pod to node" pod="{placement.namespace}/worker" node="{node}"'
    assert bound in placement.scheduler.log.read_text()
    scheduled = next(c for c in running["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "True"


def test_a_pod_no_gpu_can_hold_stays_pending_with_the_extenders_reason(placement: Placement) -> None:
    plane = placement.plane
    status, created = call(plane, "POST", placement.pods, tf_pod("too-big", placement.pool, vram="200Gi"))
    assert status == 201, created
    path = f"{placement.pods}/too-big"
    condition = wait_for(
        "the scheduler to report the pod unschedulable",
        lambda: next(
            (
                c
                for c in plane.request("GET", path)["status"].get("conditions") or []
                if c["type"] == "PodScheduled" and c["status"] == "False"
            ),
            None,
        ),
        timeout=60,
    )
    assert condition["reason"] == "Unschedulable"
    assert "vram" in condition["message"].lower(), condition
    pod = plane.request("GET", path)
    assert not pod["spec"].get("nodeName")
    assert T + "gpu-ids" not in pod["metadata"].get("annotations", {})


def test_a_pod_refused_before_its_nodes_gpus_came_is_bound_once_they_are_published(
    placement: Placement, tmp_path: Path
) -> None:
    plane = placement.plane
    node = f"kwok-late-{placement.pool}"
    plane.request("POST", "/api/v1/nodes", kwok_gpu_node(node, placement.pool))
    gpus: list[str] = []
    try:
        wait_for(
            f"KWOK to make {node} Ready",
            lambda: any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in plane.request("GET", f"/api/v1/nodes/{node}")["status"].get("conditions") or []
            ),
            timeout=60,
        )
        pod = tf_pod("waits-for-gpus", placement.pool)
        pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = node
        status, created = call(plane, "POST", placement.pods, pod)
        assert status == 201, created
        path = f"{placement.pods}/waits-for-gpus"
        wait_for(
            "the extender to refuse the pod (its node has no GPUs yet)",
            lambda: any(
                c["type"] == "PodScheduled" and c["status"] == "False"
                for c in plane.request("GET", path)["status"].get("conditions") or []
            ),
            timeout=60,
        )
        assert (
            "gpupool.io/usable-gpus"
            not in plane.request("GET", f"/api/v1/nodes/{node}")["metadata"]["labels"]
        )
        gpus = publish_gpus(plane, node, placement.pool, tmp_path / "late-nvml.json")
        published = time.monotonic()
        bound = wait_for(
            "kube-scheduler to ask again and bind the pod",
            lambda: (got := plane.request("GET", path))["spec"].get("nodeName") and got,
            timeout=30,  # its backoff is at most 10 s; without a Node change it would wait 5 minutes
        )
        waited = time.monotonic() - published
        assert bound["spec"]["nodeName"] == node, waited
        assert bound["metadata"]["annotations"][T + "gpu-ids"] in gpus
        labels = plane.request("GET", f"/api/v1/nodes/{node}")["metadata"]["labels"]
        assert labels["gpupool.io/usable-gpus"] == "2"
        assert labels[STORY_LABEL] == placement.pool  # only that one label was written
    finally:
        call(plane, "DELETE", f"{placement.pods}/waits-for-gpus")
        call(plane, "DELETE", f"/api/v1/nodes/{node}")
        call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpunodes/{node}")
        for name in gpus:
            call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpus/{name}")


def test_an_unreadable_pool_is_skipped_with_a_warning_kubectl_describe_shows(placement: Placement) -> None:
    """The relay, with only the chart's RBAC, records the Warning Event on the object itself (its
    uid included), so `kubectl describe` shows it: the describe filters Events by uid."""
    plane = placement.plane
    name = f"broken-{placement.pool}"
    requirement = {
        "key": "example.com/rack",
        "operator": "In",
        "values": ["r1"],
    }  # the CRD takes it, the model not
    broken = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": name},
        "spec": {"nodeManagerConfig": {"nodeProvisioner": {"gpuRequirements": [requirement]}}},
    }
    status, answer = call(plane, "POST", "/apis/tensor-fusion.ai/v1/gpupools", broken)
    assert status == 201, answer
    try:
        described = wait_for(
            "kubectl describe to show the Warning",
            lambda: "UnreadableSpec" in (done := plane.kubectl("describe", "gpupool", name)).stdout and done,
            timeout=60,
        )
        assert "example.com/rack" in described.stdout
    finally:
        call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpupools/{name}")
