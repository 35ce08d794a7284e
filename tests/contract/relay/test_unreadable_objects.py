"""The relay's watches against the embedded API server with one malformed GPUPool among good ones:
the good pools are still known and their pods scheduled, the bad one is skipped with a Warning
Event naming its field, and a WorkloadProfile stored in the sandbox reaches the webhook."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.core.model.pool import GPUPool
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.kube import KubeWriter, start_watches
from gpupool_incluster.relay.unreadable import read_or_skip

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import gpu_object, pool_object, tf_pod

G, V = "tensor-fusion.ai", "v1"
BAD_FIELD = "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[0]"


def _bad_pool() -> dict[str, Any]:
    body = pool_object("broken", default=False)
    requirement = {"key": "example.com/rack", "operator": "In", "values": ["r1"]}
    body["spec"] = {"nodeManagerConfig": {"nodeProvisioner": {"gpuRequirements": [requirement]}}}
    return body


def _wait(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def watched() -> Iterator[tuple[SchedulerHub, Any]]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        custom = client.CustomObjectsApi(api_client)
        custom.create_cluster_custom_object(G, V, "gpupools", pool_object("shared"))
        custom.create_cluster_custom_object(G, V, "gpupools", _bad_pool())
        custom.create_cluster_custom_object(G, V, "gpupools", pool_object("second", default=False))
        body = gpu_object("a-0", "a")
        custom.create_cluster_custom_object(G, V, "gpus", body)
        custom.patch_cluster_custom_object_status(G, V, "gpus", "a-0", {"status": body["status"]})
        profile = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "WorkloadProfile",
            "metadata": {"name": "small", "namespace": "team"},
            "spec": {"poolName": "shared", "resources": {"requests": {"tflops": "5", "vram": "2Gi"}}},
        }
        client.CoreV1Api(api_client).create_namespace({"metadata": {"name": "team"}})
        custom.create_namespaced_custom_object(G, V, "team", "workloadprofiles", profile)
        hub = SchedulerHub(KubeWriter(api_client))
        stop = threading.Event()
        start_watches(api_client, hub, stop)
        try:
            assert hub.synced.wait(10), "relay watches did not sync"
            yield hub, api_client
        finally:
            stop.set()
            api_client.close()


def _warnings(api_client: Any) -> list[Any]:
    events = client.CoreV1Api(api_client).list_event_for_all_namespaces().items
    return [e for e in events if e.type == "Warning" and e.involved_object.name == "broken"]


def test_one_malformed_pool_is_skipped_with_a_warning_and_the_rest_schedule(
    watched: tuple[SchedulerHub, Any], caplog: pytest.LogCaptureFixture
) -> None:
    hub, api_client = watched
    caplog.set_level(logging.WARNING, logger="gpupool.relay")
    _wait(lambda: {"shared", "second"} <= set(hub.policies.pools), "the good pools")
    assert "broken" not in hub.policies.pools
    _wait(lambda: bool(_warnings(api_client)), "the Warning Event on the bad pool")
    warning = _warnings(api_client)[0]
    assert warning.reason == "UnreadableSpec" and warning.involved_object.kind == "GPUPool"
    assert BAD_FIELD in warning.message and "example.com/rack" in warning.message
    _mutation, simulation = hub.simulate(tf_pod("p"), "team")
    assert simulation.node == "a"
    reports: list[str] = []  # a relist reads the bad pool again: skipped and reported again
    assert read_or_skip(GPUPool, _bad_pool(), lambda bad: reports.append(bad.message)) is None
    assert reports and BAD_FIELD in reports[0], "skipped and reported, not raised"
    assert read_or_skip(GPUPool, _bad_pool(), reports.append, deleted=True) is None
    assert len(reports) == 1, "a deleted unreadable object is skipped without a report"
    logged = [json.loads(record.getMessage()) for record in caplog.records if record.name == "gpupool.relay"]
    assert any(line.get("action") == "skip_unreadable" and BAD_FIELD in line["message"] for line in logged)


def test_a_workload_profile_in_the_sandbox_reaches_the_webhook(watched: tuple[SchedulerHub, Any]) -> None:
    hub, _ = watched
    _wait(lambda: "small" in hub.policies.profiles.get("team", {}), "the WorkloadProfile")
    pod = tf_pod("q")
    pod["metadata"]["annotations"] = {"tensor-fusion.ai/workload-profile": "small"}
    mutation = hub.admit(pod, "team", record=False)
    added = {op["path"]: op["value"] for op in mutation.patch}
    assert added["/metadata/annotations/tensor-fusion.ai~1tflops-request"] == "5"
    assert added["/metadata/annotations/tensor-fusion.ai~1vram-request"] == "2Gi"
