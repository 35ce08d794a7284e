"""Relay HTTP surface through Starlette's TestClient: every route, its shapes and its errors."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.scheduling import SchedulingConfigTemplate
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import SchedulerHub

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, gpu_model, pool_model, pool_object, tf_pod

T = "tensor-fusion.ai/"


@pytest.fixture
def writer() -> FakeWriter:
    return FakeWriter()


@pytest.fixture
def hub(writer: FakeWriter) -> SchedulerHub:
    hub = SchedulerHub(writer)
    hub.apply_pool(pool_model())
    hub.apply_gpu(gpu_model("a-0", "a", available_tflops="100"))
    hub.apply_gpu(gpu_model("b-0", "b", available_tflops="5"))
    return hub


@pytest.fixture
def http(hub: SchedulerHub) -> TestClient:
    return TestClient(create_app(hub))


def test_healthz(http: TestClient) -> None:
    assert http.get("/healthz").json() == {"status": "ok", "synced": False}


def test_filter_and_prioritize(http: TestClient) -> None:
    body = {"Pod": tf_pod("p"), "NodeNames": ["a", "b"]}
    answer = http.post("/scheduler/filter", json=body).json()
    assert answer["NodeNames"] == ["a"] and "resources" in answer["FailedNodes"]["b"]
    assert http.post("/scheduler/prioritize", json=body).json() == [
        {"Host": "a", "Score": 0},
        {"Host": "b", "Score": 0},
    ]
    broken = http.post("/scheduler/filter", content=b"{not json").json()
    assert broken["Error"].startswith("body is not JSON")
    assert http.post("/scheduler/prioritize", json={"NodeNames": []}).status_code == 400


def test_bind_writes_annotation_then_binding(http: TestClient, writer: FakeWriter, hub: SchedulerHub) -> None:
    writer.add(tf_pod("p"))
    answer = http.post(
        "/scheduler/bind", json={"PodName": "p", "PodNamespace": "team", "PodUID": "uid-p", "Node": "a"}
    )
    assert answer.json() == {"Error": ""}
    assert writer.pods["team/p"]["metadata"]["annotations"]["tensor-fusion.ai/gpu-ids"] == "a-0"
    assert writer.pods["team/p"]["spec"]["nodeName"] == "a"
    allocation = http.get("/api/allocation").json()
    assert allocation["allocations"][0]["pod"] == "team/p"
    assert (allocation["allocations"][0]["isolation"], allocation["allocations"][0]["dedicated"]) == (
        "soft",
        False,
    )
    gpu_a = next(g for g in allocation["gpus"] if g["name"] == "a-0")
    assert gpu_a["available"]["tflops"] == 90 and gpu_a["allocations"] == ["team/p"]


def test_bind_failure_releases_the_reservation(
    http: TestClient, writer: FakeWriter, hub: SchedulerHub
) -> None:
    writer.add(tf_pod("p"))
    writer.fail_next_bind = RuntimeError("409 Conflict")
    answer = http.post(
        "/scheduler/bind", json={"PodName": "p", "PodNamespace": "team", "PodUID": "uid-p", "Node": "a"}
    )
    assert "409 Conflict" in answer.json()["Error"]
    assert hub.allocator.state.allocations == {}
    assert "tensor-fusion.ai/gpu-ids" not in writer.pods["team/p"]["metadata"]["annotations"]
    # A late watch event for the annotated-but-unbound pod must not resurrect the reservation.
    late = tf_pod("p", extra={"tensor-fusion.ai/gpu-ids": "a-0"})
    hub.apply_pod(Pod.model_validate(late))
    assert hub.allocator.state.allocations == {}
    missing = http.post(
        "/scheduler/bind", json={"PodName": "ghost", "PodNamespace": "team", "Node": "a"}
    ).json()
    assert "cannot read pod team/ghost" in missing["Error"]
    assert (
        http.post("/scheduler/bind", json={"PodName": "p"}).json()["Error"].startswith("ExtenderBindingArgs")
    )


def test_mutate_pod_webhook(http: TestClient) -> None:
    pod = tf_pod("p", extra={})
    del pod["metadata"]["annotations"][T + "gpupool"]
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u", "operation": "CREATE", "namespace": "team", "object": pod},
    }
    response = http.post("/mutate-pod", json=review).json()["response"]
    assert response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"]))
    assert {
        "op": "add",
        "path": "/metadata/annotations/tensor-fusion.ai~1gpupool",
        "value": "shared",
    } in patch
    pod["metadata"]["annotations"][T + "qos"] = "bogus"
    refused = http.post("/mutate-pod", json=review).json()["response"]
    assert refused["allowed"] is False and "qos='bogus'" in refused["status"]["message"]
    assert http.post("/mutate-pod", json={"kind": "Pod"}).status_code == 400


SIMULATE_YAML = """apiVersion: v1
kind: Pod
metadata:
  name: test-pod
  namespace: default
  labels:
    tensor-fusion.ai/enabled: "true"
  annotations:
    tensor-fusion.ai/tflops-request: "50"
    tensor-fusion.ai/vram-request: "16Gi"
    tensor-fusion.ai/tflops-limit: "50"
    tensor-fusion.ai/vram-limit: "16Gi"
spec:
  schedulerName: tensor-fusion-scheduler
  containers:
  - name: test-container
    image: nvidia/cuda
"""


def test_simulate_schedule_yaml_has_no_side_effects(http: TestClient, hub: SchedulerHub) -> None:
    answer = http.post(
        "/api/simulate-schedule", content=SIMULATE_YAML, headers={"Content-Type": "application/yaml"}
    )
    body = answer.json()
    assert (body["node"], body["gpus"]) == ("a", ["a-0"])
    resources = next(s for s in body["filterStages"] if s["stage"] == "resources")
    assert resources["before"] == ["a-0", "b-0"] and resources["after"] == ["a-0"]
    assert "free 5 TFLOPS" in resources["reasons"]["b-0"]
    assert hub.allocator.state.allocations == {}


def test_simulate_impossible_pod_says_why_per_stage(http: TestClient) -> None:
    impossible = SIMULATE_YAML.replace('tflops-request: "50"', 'tflops-request: "500"').replace(
        'tflops-limit: "50"', 'tflops-limit: "500"'
    )
    body = http.post("/api/simulate-schedule", content=impossible).json()
    assert body["node"] is None
    assert body["diagnosis"] == "no candidate left after stage 'resources'"
    assert set(body["nodeReasons"]) == {"a", "b"}
    bad = http.post("/api/simulate-schedule", content=SIMULATE_YAML.replace('"16Gi"', '"lots"', 1))
    assert bad.status_code == 422 and "not a quantity" in bad.json()["diagnosis"]
    assert http.post("/api/simulate-schedule", content=b"- a list").status_code == 400
    plain = http.post(
        "/api/simulate-schedule", content=SIMULATE_YAML.replace('enabled: "true"', 'enabled: "false"')
    )
    # It still names tensor-fusion-scheduler: the webhook refuses it (a pod naming the scheduler
    # must ask gpupool for GPUs), rather than leave it to be bound with none.
    assert plain.status_code == 422 and "does not ask gpupool for GPUs" in plain.json()["diagnosis"]
    unscheduled = SIMULATE_YAML.replace('enabled: "true"', 'enabled: "false"').replace(
        "  schedulerName: tensor-fusion-scheduler\n", ""
    )
    left = http.post("/api/simulate-schedule", content=unscheduled)
    assert left.status_code == 422 and "leave this pod on nvidia.com/gpu" in left.json()["diagnosis"]


def test_node_objects_feed_node_affinity_and_vram_expansion(hub: SchedulerHub, http: TestClient) -> None:
    node = {"metadata": {"name": "b", "labels": {"zone": "z9"}}, "status": {"capacity": {"memory": "64Gi"}}}
    hub.apply_node(Node.model_validate(node))
    pod = tf_pod("p", tflops="1")
    pod["spec"]["nodeSelector"] = {"zone": "z9"}
    answer = http.post("/scheduler/filter", json={"Pod": pod, "NodeNames": ["a", "b"]}).json()
    assert answer["NodeNames"] == ["b"] and "nodeSelector zone=z9" in answer["FailedNodes"]["a"]
    assert hub.allocator.state.node_host["b"] == (64 << 30, 0)


def test_enabled_replicas_counts_admitted_replicas_per_owner(hub: SchedulerHub) -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}
    for i in range(2):
        moved = tf_pod(f"m{i}")
        moved["metadata"]["ownerReferences"] = [owner]
        hub.apply_pod(Pod.model_validate(moved))
    newcomer = tf_pod("n")
    newcomer["metadata"]["ownerReferences"] = [owner]
    newcomer["metadata"]["annotations"] = {
        T + "tflops-limit": "10",
        T + "vram-limit": "1Gi",
        T + "enabled-replicas": "2",
    }
    assert hub.admission_context(newcomer, "team").migrated_replicas == 2
    assert hub.admit(newcomer, "team").patch == []
    gone = tf_pod("m0") | {"metadata": {**tf_pod("m0")["metadata"], "ownerReferences": [owner]}}
    hub.apply_pod(Pod.model_validate(gone), deleted=True)
    assert any(op["path"] == "/spec/schedulerName" for op in hub.admit(newcomer, "team").patch)


def test_pool_placement_mode_comes_from_its_scheduling_config_template(hub: SchedulerHub) -> None:
    template = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "SchedulingConfigTemplate",
        "metadata": {"name": "spread"},
        "spec": {"placement": {"mode": "LowLoadFirst"}},
    }
    hub.apply_template(SchedulingConfigTemplate.model_validate(template))
    pool = pool_object()
    pool["spec"] = {"schedulingConfigTemplate": "spread"}
    hub.apply_pool(GPUPool.model_validate(pool))
    assert str(hub.allocator.mode_for("shared")) == "LowLoadFirst"
    assert str(hub.allocator.mode_for("other")) == "NodeCompactGPULowLoad"


def test_pods_seen_before_their_gpus_are_counted_when_the_gpu_appears(hub: SchedulerHub) -> None:
    pod = tf_pod("early", tflops="30", extra={"tensor-fusion.ai/gpu-ids": "c-0"})
    pod["spec"]["nodeName"] = "c"
    hub.apply_pod(Pod.model_validate(pod))
    assert hub.allocator.state.allocations.get("team/early") is None
    hub.apply_gpu(gpu_model("c-0", "c"))
    state = hub.allocator.state
    state.ensure_layout()
    assert state.allocations["team/early"].gpus == ("c-0",)
    assert int(state.avail_t[state.slot_of["c-0"]]) == 70_000
    hub.apply_pod(Pod.model_validate(pod), deleted=True)
    assert "team/early" not in state.allocations and hub.holders == {}
