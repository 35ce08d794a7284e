"""Watch through `kubernetes.watch.Watch`: initial ADDED events, MODIFIED and DELETED,
resuming from a resourceVersion, timeoutSeconds, selector transitions, 410 Expired."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubeapi_builders import crd, node
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI


def _events(stream: Any) -> list[tuple[str, str]]:
    return [(event["type"], event["object"].metadata.name) for event in stream]


def test_watch_without_resource_version_starts_with_current_objects(core: client.CoreV1Api) -> None:
    core.create_node(node("n1"))
    core.create_node(node("n2"))
    assert _events(watch.Watch().stream(core.list_node, timeout_seconds=1)) == [
        ("ADDED", "n1"),
        ("ADDED", "n2"),
    ]


def test_watch_replays_changes_after_a_resource_version(core: client.CoreV1Api) -> None:
    start = core.list_node().metadata.resource_version
    core.create_node(node("n1"))
    core.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
    core.delete_node("n1")
    seen = _events(watch.Watch().stream(core.list_node, resource_version=start, timeout_seconds=1))
    assert seen == [("ADDED", "n1"), ("MODIFIED", "n1"), ("DELETED", "n1")]


def test_watch_streams_live_events(core: client.CoreV1Api) -> None:
    start = core.list_namespaced_config_map("default").metadata.resource_version
    seen: list[tuple[str, str]] = []
    watcher = watch.Watch()

    def consume() -> None:
        for event in watcher.stream(
            core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=10
        ):
            seen.append((event["type"], event["object"].metadata.name))
            if event["type"] == "DELETED":
                watcher.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.2)
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    core.patch_namespaced_config_map("c", "default", {"data": {"k": "v"}})
    core.create_namespaced_config_map("kube-system", {"metadata": {"name": "elsewhere"}})
    core.delete_namespaced_config_map("c", "default")
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert seen == [("ADDED", "c"), ("MODIFIED", "c"), ("DELETED", "c")]


def test_watch_ends_after_timeout_seconds(core: client.CoreV1Api) -> None:
    began = time.monotonic()
    assert _events(watch.Watch().stream(core.list_node, resource_version="1", timeout_seconds=1)) == []
    assert time.monotonic() - began < 5


def test_label_selector_watch_reports_objects_entering_and_leaving(core: client.CoreV1Api) -> None:
    start = core.list_node().metadata.resource_version
    core.create_node(node("n1"))
    core.patch_node("n1", {"metadata": {"labels": {"pool": "gpu"}}})
    core.patch_node("n1", {"metadata": {"labels": {"pool": "gpu", "x": "y"}}})
    core.patch_node("n1", {"metadata": {"labels": {"pool": "cpu"}}})
    stream = watch.Watch().stream(
        core.list_node, label_selector="pool=gpu", resource_version=start, timeout_seconds=1
    )
    assert _events(stream) == [("ADDED", "n1"), ("MODIFIED", "n1"), ("DELETED", "n1")]


def test_watch_custom_objects(apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi) -> None:
    apiext.create_custom_resource_definition(crd(scope="Cluster", kind="Gadget", plural="gadgets"))
    start = custom.list_cluster_custom_object("example.gpupool.dev", "v1", "gadgets")["metadata"][
        "resourceVersion"
    ]
    custom.create_cluster_custom_object(
        "example.gpupool.dev",
        "v1",
        "gadgets",
        {"apiVersion": "example.gpupool.dev/v1", "kind": "Gadget", "metadata": {"name": "g"}},
    )
    custom.delete_cluster_custom_object("example.gpupool.dev", "v1", "gadgets", "g")
    stream = watch.Watch().stream(
        custom.list_cluster_custom_object,
        "example.gpupool.dev",
        "v1",
        "gadgets",
        resource_version=start,
        timeout_seconds=1,
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in stream] == [
        ("ADDED", "g"),
        ("DELETED", "g"),
    ]


def test_too_old_resource_version_is_410() -> None:
    with EmbeddedKubeAPI(watch_history=2) as api:
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(api.kubeconfig_path)))
        for index in range(8):
            core.create_node(node(f"n{index}"))
        with pytest.raises(ApiException) as raised:
            list(watch.Watch().stream(core.list_node, resource_version="1", timeout_seconds=1))
        assert raised.value.status == 410
        recent = core.list_node().metadata.resource_version
        core.create_node(node("fresh"))
        stream = watch.Watch().stream(core.list_node, resource_version=recent, timeout_seconds=1)
        assert _events(stream) == [("ADDED", "fresh")]


def test_bookmark_carries_the_latest_resource_version(core: client.CoreV1Api) -> None:
    start = core.list_node().metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "unrelated"}})
    watcher = watch.Watch()
    # Upstream's cacher sends it 2 s before the deadline (and every minute before that).
    events = list(
        watcher.stream(core.list_node, resource_version=start, timeout_seconds=3, allow_watch_bookmarks=True)
    )
    assert [event["type"] for event in events] == ["BOOKMARK"]
    latest = core.list_node().metadata.resource_version
    assert watcher.resource_version == latest


def test_a_watch_shorter_than_two_seconds_gets_no_bookmark(core: client.CoreV1Api) -> None:
    start = core.list_node().metadata.resource_version
    stream = watch.Watch().stream(
        core.list_node, resource_version=start, timeout_seconds=1, allow_watch_bookmarks=True
    )
    assert list(stream) == []


def test_bad_timeout_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.list_node(watch=True, timeout_seconds=-1, _preload_content=False)
    assert raised.value.status == 400


def test_deleted_event_after_finalizer_removal_carries_the_final_state(core: client.CoreV1Api) -> None:
    start = core.list_node().metadata.resource_version
    core.create_node({"metadata": {"name": "n1", "finalizers": ["gpupool.dev/drain"]}})
    core.delete_node("n1")
    core.patch_node("n1", {"metadata": {"finalizers": None}}, _content_type="application/merge-patch+json")
    events = list(watch.Watch().stream(core.list_node, resource_version=start, timeout_seconds=1))
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    final = events[-1]["object"]
    assert final.metadata.deletion_timestamp is not None and not final.metadata.finalizers
    assert int(final.metadata.resource_version) > int(events[1]["object"].metadata.resource_version)


def test_an_object_leaving_the_selector_is_deleted_as_it_last_matched(kube_api: EmbeddedKubeAPI) -> None:
    """Upstream's watch cache: the DELETED event carries the object as the watcher last saw it."""
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(kube_api.kubeconfig_path)))
    start = core.list_node().metadata.resource_version
    core.create_node(node("n1", labels={"team": "x"}))
    core.patch_node("n1", {"metadata": {"labels": {"team": "z"}}})
    stream = watch.Watch().stream(
        core.list_node, label_selector="team=x", resource_version=start, timeout_seconds=1
    )
    events = [(e["type"], e["object"].metadata.labels["team"]) for e in stream]
    assert events == [("ADDED", "x"), ("DELETED", "x")]
