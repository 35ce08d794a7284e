"""Progressive migration against the embedded API server: the used-by taint follows gpupool's workers.

The relay (hub + watches + taint keeper, official client) binds pods through the extender's bind;
the Node objects in the API server must gain `tensor-fusion.ai/used-by=tensor-fusion:
PreferNoSchedule` with the first worker, keep it while any worker remains, lose it with the last,
and never lose a taint that is not ours. A stale taint on an idle node is cleared at start.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool_incluster.relay.hub import HubSettings, SchedulerHub
from gpupool_incluster.relay.kube import KubeWriter, start_watches
from gpupool_incluster.relay.migration import TaintKeeper

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import gpu_object, pool_object, tf_pod

G, V = "tensor-fusion.ai", "v1"
OURS = {"key": "tensor-fusion.ai/used-by", "value": "tensor-fusion", "effect": "PreferNoSchedule"}
OTHER = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def _wait(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _taints(core: Any, node: str) -> list[dict[str, Any]]:
    stored = core.read_node(node).spec.taints or []
    return [{"key": t.key, "value": t.value, "effect": t.effect} for t in stored]


@pytest.fixture
def cluster() -> Iterator[Any]:
    """Nodes a (with a foreign taint), b (with a stale used-by taint) and c; GPUs on each; a namespace."""
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        core: Any = client.CoreV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        for node, taints in (("a", [OTHER]), ("b", [OURS]), ("c", [])):
            core.create_node({"metadata": {"name": node}, "spec": {"taints": taints}})
            body = gpu_object(f"{node}-0", node)
            custom.create_cluster_custom_object(G, V, "gpus", body)
            custom.patch_cluster_custom_object_status(G, V, "gpus", f"{node}-0", {"status": body["status"]})
        custom.create_cluster_custom_object(G, V, "gpupools", pool_object())
        core.create_namespace({"metadata": {"name": "team"}})
        try:
            yield api_client
        finally:
            api_client.close()


def _relay(api_client: Any, *, progressive: bool) -> tuple[SchedulerHub, threading.Event]:
    writer = KubeWriter(api_client)
    hub = SchedulerHub(writer, HubSettings(progressive_migration=progressive), tainter=writer)
    stop = threading.Event()
    start_watches(api_client, hub, stop)
    assert hub.synced.wait(10), "relay watches did not sync"
    return hub, stop


def _bind(hub: SchedulerHub, core: Any, name: str, node: str) -> None:
    pod = tf_pod(name, tflops="10")
    pod["metadata"].pop("uid")
    created = core.create_namespaced_pod("team", pod)
    hub.bind("team", name, created.metadata.uid, node)
    _wait(lambda: f"team/{name}" in hub.allocator.state.allocations, f"the watch to show {name}")


def test_taint_follows_the_first_and_the_last_worker(cluster: Any) -> None:
    core: Any = client.CoreV1Api(cluster)
    hub, stop = _relay(cluster, progressive=True)
    try:
        _wait(lambda: _taints(core, "b") == [], "the stale taint on idle node b to be cleared")
        assert _taints(core, "a") == [OTHER]
        _bind(hub, core, "w1", "a")
        _wait(lambda: _taints(core, "a") == [OTHER, OURS], "node a to be tainted after its first worker")
        _bind(hub, core, "w2", "a")
        core.delete_namespaced_pod("w1", "team")
        _wait(lambda: "team/w1" not in hub.allocator.state.allocations, "w1's release")
        assert hub.taints is not None
        assert hub.taints.reconcile_once().empty  # one worker left: nothing to change
        assert _taints(core, "a") == [OTHER, OURS]
        core.delete_namespaced_pod("w2", "team")
        _wait(lambda: _taints(core, "a") == [OTHER], "node a's taint to go with its last worker")
        assert _taints(core, "c") == [] and hub.taints.failures == {}
    finally:
        stop.set()


def test_a_bound_worker_found_at_start_taints_its_node(cluster: Any) -> None:
    core: Any = client.CoreV1Api(cluster)
    pod = tf_pod("old", extra={"tensor-fusion.ai/gpu-ids": "c-0"})
    pod["metadata"].pop("uid")
    pod["spec"]["nodeName"] = "c"
    core.create_namespaced_pod("team", pod)
    _, stop = _relay(cluster, progressive=True)
    try:
        _wait(lambda: _taints(core, "c") == [OURS], "node c, which already runs a worker, to be tainted")
        _wait(lambda: _taints(core, "b") == [], "idle node b's stale taint to be cleared")
    finally:
        stop.set()


def test_without_progressive_migration_no_node_is_touched(cluster: Any) -> None:
    core: Any = client.CoreV1Api(cluster)
    hub, stop = _relay(cluster, progressive=False)
    try:
        assert hub.taints is None
        _bind(hub, core, "w1", "a")
        time.sleep(0.3)
        assert (_taints(core, "a"), _taints(core, "b")) == ([OTHER], [OURS])
    finally:
        stop.set()


class _FlakyTainter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.fail = True

    def set_used_by_taint(self, node: str, present: bool) -> bool:
        self.calls.append((node, present))
        if self.fail:
            self.fail = False
            raise RuntimeError("503 Service Unavailable")
        return True


def test_a_failed_write_is_recorded_and_retried() -> None:
    tainter = _FlakyTainter()
    busy = {"a"}
    keeper = TaintKeeper(
        tainter, lock=threading.RLock(), busy_nodes=lambda: set(busy), synced=threading.Event()
    )
    keeper.observe_node("a", tainted=False)
    keeper.reconcile_once()
    assert keeper.failures == {"a": "503 Service Unavailable"} and "a" not in keeper.tainted
    keeper.reconcile_once()
    assert keeper.failures == {} and keeper.tainted == {"a"}
    busy.clear()
    keeper.reconcile_once()
    assert tainter.calls == [("a", True), ("a", True), ("a", False)] and keeper.tainted == set()


def test_a_concurrent_taint_edit_is_not_lost(cluster: Any) -> None:
    core: Any = client.CoreV1Api(cluster)
    writer = KubeWriter(cluster)
    real_read = writer.core.read_node
    reads: list[str] = []

    def read_then_race(name: str) -> Any:
        node = real_read(name)
        if not reads:  # someone else edits the taints between our read and our patch
            core.patch_node(name, {"spec": {"taints": [OTHER, {"key": "late", "effect": "NoSchedule"}]}})
        reads.append(name)
        return node

    writer.core.read_node = read_then_race
    assert writer.set_used_by_taint("a", True) is True
    assert len(reads) == 2  # the stale patch was refused (409) and the edit recomputed
    late = {"key": "late", "value": None, "effect": "NoSchedule"}
    assert _taints(core, "a") == [OTHER, late, OURS]
    assert writer.set_used_by_taint("a", True) is False
    assert writer.set_used_by_taint("a", False) is True and _taints(core, "a") == [OTHER, late]
