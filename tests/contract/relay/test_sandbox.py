"""The relay against the embedded Kubernetes API server, through the official client and real HTTP.

GPU objects, a pool and pods live in the sandbox; the relay lists and watches them, then
simulate-schedule, /scheduler/filter, /scheduler/bind and /api/allocation are exercised.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from kubernetes import client, config

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.kube import KubeWriter, start_watches
from gpupool_incluster.relay.serve import self_signed_pair

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import gpu_object, pool_object, tf_pod

G, V = "tensor-fusion.ai", "v1"


def _wait(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def sandbox() -> Iterator[tuple[EmbeddedKubeAPI, Any]]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        custom = client.CustomObjectsApi(api_client)
        custom.create_cluster_custom_object(G, V, "gpupools", pool_object())
        for name, node, free in (("a-0", "a", "100"), ("a-1", "a", "100"), ("b-0", "b", "20")):
            body = gpu_object(name, node, available_tflops=free, index=int(name[-1]))
            custom.create_cluster_custom_object(G, V, "gpus", body)
            custom.patch_cluster_custom_object_status(G, V, "gpus", name, {"status": body["status"]})
        try:
            yield api, api_client
        finally:
            api_client.close()


@pytest.fixture
def relay(sandbox: tuple[EmbeddedKubeAPI, Any]) -> Iterator[tuple[str, SchedulerHub, Any]]:
    """The relay app served by uvicorn over plain HTTP on a loopback port."""
    _, api_client = sandbox
    hub = SchedulerHub(KubeWriter(api_client))
    stop = threading.Event()
    start_watches(api_client, hub, stop)
    assert hub.synced.wait(10), "relay watches did not sync"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(hub), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    _wait(lambda: server.started, "uvicorn to start")
    try:
        yield f"http://127.0.0.1:{port}", hub, api_client
    finally:
        server.should_exit = True
        thread.join(10)
        stop.set()


SIMULATE = """apiVersion: v1
kind: Pod
metadata:
  name: test-pod
  namespace: default
  labels: {tensor-fusion.ai/enabled: "true"}
  annotations:
    tensor-fusion.ai/tflops-request: "%s"
    tensor-fusion.ai/vram-request: "16Gi"
    tensor-fusion.ai/gpu-count: "%s"
spec:
  containers: [{name: c, image: nvidia/cuda}]
"""


def test_simulate_schedule_picks_node_and_gpus_and_explains_failure(
    relay: tuple[str, SchedulerHub, Any],
) -> None:
    url, _, _ = relay
    two = httpx.post(f"{url}/api/simulate-schedule", content=SIMULATE % ("10", "2")).json()
    assert two["node"] == "a" and sorted(two["gpus"]) == ["a-0", "a-1"]
    same_node = next(s for s in two["filterStages"] if s["stage"] == "sameNode")
    assert "b" in same_node["reasons"]
    impossible = httpx.post(f"{url}/api/simulate-schedule", content=SIMULATE % ("500", "1")).json()
    assert impossible["node"] is None
    resources = next(s for s in impossible["filterStages"] if s["stage"] == "resources")
    assert set(resources["reasons"]) == {"a-0", "a-1", "b-0"} and resources["after"] == []
    assert "requested 500 TFLOPS" in resources["reasons"]["b-0"]


def test_filter_returns_fitting_nodes_and_reasons(relay: tuple[str, SchedulerHub, Any]) -> None:
    url, _, _ = relay
    answer = httpx.post(
        f"{url}/scheduler/filter", json={"Pod": tf_pod("p", tflops="50"), "NodeNames": ["a", "b", "cpu-1"]}
    ).json()
    assert answer["NodeNames"] == ["a"]
    assert answer["FailedNodes"]["b"].startswith("resources: b-0: free 20 TFLOPS")
    assert "no GPU managed by gpupool" in answer["FailedNodes"]["cpu-1"]
    gpus = httpx.get(f"{url}/api/allocation").json()["gpus"]
    assert [g["name"] for g in gpus] == ["a-0", "a-1", "b-0"]


def test_bind_annotates_and_binds_in_the_api_server(relay: tuple[str, SchedulerHub, Any]) -> None:
    url, hub, api_client = relay
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "team"}})
    pod = tf_pod("w", tflops="30")
    pod["metadata"].pop("uid")
    created = core.create_namespaced_pod("team", pod)
    args = {"PodName": "w", "PodNamespace": "team", "PodUID": created.metadata.uid, "Node": "a"}
    assert httpx.post(f"{url}/scheduler/bind", json=args).json() == {"Error": ""}
    stored = core.read_namespaced_pod("w", "team")
    assert stored.spec.node_name == "a"
    assert stored.metadata.annotations["tensor-fusion.ai/gpu-ids"] in ("a-0", "a-1")
    again = httpx.post(f"{url}/scheduler/bind", json=args).json()
    assert again["Error"]
    _wait(lambda: hub.allocator.state.allocations.get("team/w") is not None, "the watch to see the pod")
    report = httpx.get(f"{url}/api/allocation").json()
    assert [a["pod"] for a in report["allocations"]] == ["team/w"]
    held = next(g for g in report["gpus"] if g["allocations"] == ["team/w"])
    assert held["available"]["tflops"] == 70
    core.delete_namespaced_pod("w", "team")
    _wait(lambda: "team/w" not in hub.allocator.state.allocations, "the deletion to release the GPU")


def test_tls_is_served_with_a_self_signed_pair(tmp_path: Path, relay: tuple[str, SchedulerHub, Any]) -> None:
    import datetime as dt

    _, hub, _ = relay
    cert, key = self_signed_pair("127.0.0.1", tmp_path, now=dt.datetime.now(dt.UTC))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(hub),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            ssl_certfile=str(cert),
            ssl_keyfile=str(key),
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _wait(lambda: server.started, "TLS uvicorn to start")
        assert httpx.get(f"https://127.0.0.1:{port}/healthz", verify=str(cert)).json()["synced"] is True
    finally:
        server.should_exit = True
        thread.join(10)
