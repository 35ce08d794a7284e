"""Patches through the official client: JSON merge, JSON patch and strategic merge patch
(containers by name, conditions by type, finalizers as a set, tolerations replaced as
upstream), and optimistic concurrency on patches."""

from __future__ import annotations

import json

import pytest
from kubeapi_builders import crd, node, pod, status_body
from kubernetes import client
from kubernetes.client.exceptions import ApiException


def test_strategic_merge_patch_merges_containers_by_name(core: client.CoreV1Api) -> None:
    body = pod("p")
    body["spec"]["containers"].append({"name": "sidecar", "image": "envoy:1"})
    core.create_namespaced_pod("default", body)
    patched = core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "sidecar", "image": "envoy:2"}]}}
    )
    assert [(c.name, c.image) for c in patched.spec.containers] == [
        ("main", "busybox"),
        ("sidecar", "envoy:2"),
    ]


def test_strategic_merge_patch_replaces_tolerations_like_upstream(core: client.CoreV1Api) -> None:
    body = pod("p", tolerations=[{"key": "gpu", "operator": "Exists"}])
    core.create_namespaced_pod("default", body)
    added = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    with pytest.raises(ApiException) as raised:  # replacing drops the old toleration: forbidden on pods
        core.patch_namespaced_pod("p", "default", {"spec": {"tolerations": [added]}})
    assert raised.value.status == 422
    patched = core.patch_namespaced_pod(
        "p", "default", {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}, added]}}
    )
    assert [t.key for t in patched.spec.tolerations] == ["gpu", "spot"]


def test_strategic_merge_patch_merges_conditions_by_type(core: client.CoreV1Api) -> None:
    core.create_node(node("n1"))
    core.patch_node_status(
        "n1",
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "DiskPressure", "status": "False"},
                ]
            }
        },
    )
    patched = core.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert {(c.type, c.status) for c in patched.status.conditions} == {
        ("Ready", "True"),
        ("DiskPressure", "False"),
    }


def test_strategic_merge_patch_delete_directive(core: client.CoreV1Api) -> None:
    core.create_node(node("n1"))
    core.patch_node_status(
        "n1",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "True"}]}},
    )
    patched = core.patch_node_status("n1", {"status": {"conditions": [{"type": "X", "$patch": "delete"}]}})
    assert [c.type for c in patched.status.conditions] == ["Ready"]


def test_strategic_merge_patch_unions_finalizers_and_can_remove_them(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "c", "finalizers": ["a.io/x"]}})
    merged = core.patch_namespaced_config_map("c", "default", {"metadata": {"finalizers": ["b.io/y"]}})
    assert merged.metadata.finalizers == ["a.io/x", "b.io/y"]
    removed = core.patch_namespaced_config_map(
        "c", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x"]}}
    )
    assert removed.metadata.finalizers == ["b.io/y"]


def test_json_merge_patch_replaces_lists_and_deletes_with_null(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"k": "v"}}
    )
    patched = core.patch_namespaced_config_map(
        "c",
        "default",
        {"metadata": {"labels": {"a": None}}, "data": {"k2": "v2"}},
        _content_type="application/merge-patch+json",
    )
    assert patched.metadata.labels == {"b": "2"}
    assert patched.data == {"k": "v", "k2": "v2"}


def test_json_patch_operations(core: client.CoreV1Api) -> None:
    core.create_node(node("n1", labels={"a": "1"}))
    patched = core.patch_node(
        "n1",
        [
            {"op": "add", "path": "/metadata/labels/gpu~1type", "value": "a100"},
            {"op": "replace", "path": "/metadata/labels/a", "value": "2"},
            {"op": "add", "path": "/spec", "value": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
            {"op": "add", "path": "/spec/taints/-", "value": {"key": "z", "effect": "NoExecute"}},
            {"op": "test", "path": "/metadata/labels/a", "value": "2"},
        ],
    )
    assert patched.metadata.labels == {"a": "2", "gpu/type": "a100"}
    assert [t.key for t in patched.spec.taints] == ["k", "z"]


def test_failed_json_patch_test_is_422_and_changes_nothing(core: client.CoreV1Api) -> None:
    created = core.create_node(node("n1", labels={"a": "1"}))
    with pytest.raises(ApiException) as raised:
        core.patch_node(
            "n1",
            [
                {"op": "replace", "path": "/metadata/labels/a", "value": "9"},
                {"op": "test", "path": "/metadata/labels/a", "value": "1"},
            ],
        )
    assert raised.value.status == 422
    assert core.read_node("n1").metadata.resource_version == created.metadata.resource_version


def test_patch_with_stale_resource_version_is_409(core: client.CoreV1Api) -> None:
    created = core.create_node(node("n1"))
    core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
    with pytest.raises(ApiException) as raised:
        core.patch_node(
            "n1", {"metadata": {"labels": {"a": "2"}, "resourceVersion": created.metadata.resource_version}}
        )
    assert raised.value.status == 409 and status_body(raised.value)["reason"] == "Conflict"


def test_custom_resources_refuse_strategic_merge_patch(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    apiext.create_custom_resource_definition(crd())
    custom.create_namespaced_custom_object(
        "example.gpupool.dev",
        "v1",
        "default",
        "widgets",
        {
            "apiVersion": "example.gpupool.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
        },
    )
    with pytest.raises(ApiException) as raised:
        custom.patch_namespaced_custom_object(
            "example.gpupool.dev",
            "v1",
            "default",
            "widgets",
            "w",
            {"spec": {"size": 2}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert raised.value.status == 415
    assert json.loads(raised.value.body)["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    merged = custom.patch_namespaced_custom_object(
        "example.gpupool.dev", "v1", "default", "widgets", "w", {"spec": {"size": 2}}
    )
    assert merged["spec"] == {"size": 2}
