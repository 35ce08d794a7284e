"""Server-side apply over raw HTTP (`application/apply-patch+yaml`): creation, managedFields,
conflicts between managers (409 naming the field) and `force`, removal of fields a manager
stops applying unless another manager owns them, keyed lists merged item by item."""

from __future__ import annotations

from typing import Any

import yaml
from kubeapi_builders import http_call

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"


def _apply(
    api: EmbeddedKubeAPI, path: str, body: dict[str, Any], manager: str, force: bool = False
) -> tuple[int, Any]:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    status, answer, _ = http_call(
        api.port, "PATCH", path + query, yaml.safe_dump(body).encode(), content_type=APPLY
    )
    return status, answer


def _config(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}


def _owners(obj: dict[str, Any]) -> dict[str, set[str]]:
    return {
        entry["manager"]: {key[2:] for key in entry["fieldsV1"].get("f:data", {})}
        for entry in obj["metadata"]["managedFields"]
    }


def test_apply_creates_then_conflicts_then_forces(kube_api: EmbeddedKubeAPI) -> None:
    status, created = _apply(kube_api, f"{CONFIGMAPS}/c", _config(a="1", b="2"), "alice")
    assert status == 201
    assert [(m["manager"], m["operation"]) for m in created["metadata"]["managedFields"]] == [
        ("alice", "Apply")
    ]
    status, refused = _apply(kube_api, f"{CONFIGMAPS}/c", _config(a="9"), "bob")
    assert (status, refused["reason"]) == (409, "Conflict")
    assert refused["message"] == 'Apply failed with 1 conflict: conflict with "alice" using v1: .data.a'
    assert [c["field"] for c in refused["details"]["causes"]] == [".data.a"]
    assert http_call(kube_api.port, "GET", f"{CONFIGMAPS}/c")[1]["data"] == {"a": "1", "b": "2"}
    status, forced = _apply(kube_api, f"{CONFIGMAPS}/c", _config(a="9"), "bob", force=True)
    assert status == 200 and forced["data"] == {"a": "9", "b": "2"}
    assert _owners(forced) == {"alice": {"b"}, "bob": {"a"}}


def test_same_values_are_shared_and_dropped_fields_removed(kube_api: EmbeddedKubeAPI) -> None:
    _apply(kube_api, f"{CONFIGMAPS}/c", _config(a="1", b="2", c="3"), "alice")
    status, shared = _apply(kube_api, f"{CONFIGMAPS}/c", _config(a="1"), "bob")
    assert status == 200 and _owners(shared) == {"alice": {"a", "b", "c"}, "bob": {"a"}}
    status, reapplied = _apply(kube_api, f"{CONFIGMAPS}/c", _config(b="2"), "alice")
    assert status == 200
    assert reapplied["data"] == {"a": "1", "b": "2"}  # c removed; a kept: bob still owns it


def test_keyed_lists_merge_item_by_item(kube_api: EmbeddedKubeAPI) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments/web"

    def deployment(container: str, image: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": container, "image": image}]},
                },
            },
        }

    assert _apply(kube_api, path, deployment("main", "nginx:1"), "alice")[0] == 201
    status, merged = _apply(kube_api, path, deployment("sidecar", "envoy:1"), "bob")
    assert status == 200
    containers = merged["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("main", "nginx:1"), ("sidecar", "envoy:1")]


def test_apply_needs_a_field_manager(kube_api: EmbeddedKubeAPI) -> None:
    status, answer, _ = http_call(
        kube_api.port, "PATCH", f"{CONFIGMAPS}/c", yaml.safe_dump(_config(a="1")).encode(), content_type=APPLY
    )
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert http_call(kube_api.port, "GET", f"{CONFIGMAPS}/c")[0] == 404
