"""The reads the functions rely on, served as kube-apiserver serves them, over raw HTTP: pod field
selectors (`spec.nodeName`, "" for unbound pods; `status.phase`, `=` and `!=`), one node's pods
answered from the store's node index as a full scan would answer them through binds, deletes,
namespaces and pages; metadata-only lists
(`PartialObjectMetadataList` via the Accept header the adapters send) paged like full ones and in
watch events; resourceVersion semantics for lists (`0` is any version, served whole as the watch
cache does; a paged list naming another version without a match is Exact → 410; NotOlderThan);
Table rows — a node's Status cell as upstream's `printNode` writes it, a custom resource's
printer-column cells null when missing and typed as declared; Status bodies with upstream's key
order and a trailing newline; v1 ReplicationController defaults and validation."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _call(
    api: EmbeddedKubeAPI, method: str, path: str, body: Any = None, accept: str = "application/json"
) -> tuple[int, Any, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Accept": accept}
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return response.status, json.loads(raw), raw


def _pod(name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


def test_pods_are_picked_by_node_and_phase(kube_api: EmbeddedKubeAPI) -> None:
    for name, node in (("a", "n1"), ("b", "n2"), ("waiting", None)):
        _call(kube_api, "POST", "/api/v1/namespaces/default/pods", _pod(name, node))
    pods = kube_api.cluster.resolve("", "v1", "pods")
    running = {"status": {"phase": "Running"}}
    kube_api.cluster.patch(
        pods, "default", "a", running, "application/merge-patch+json", subresource="status"
    )

    def listed(selector: str) -> list[str]:
        code, body, _ = _call(kube_api, "GET", f"/api/v1/pods?fieldSelector={selector}")
        assert code == 200, body
        return _names(body)

    assert listed("spec.nodeName=n1") == ["a"]
    assert listed("spec.nodeName=") == ["waiting"]
    assert listed("spec.nodeName=,status.phase=Pending") == ["waiting"]  # Pending: set on create
    assert listed("status.phase!=Running") == ["b", "waiting"]
    assert listed("status.phase=Running,spec.nodeName!=n2") == ["a"]
    code, body, _ = _call(kube_api, "GET", "/api/v1/pods?fieldSelector=spec.hostname=x")
    assert (code, body["reason"]) == (400, "BadRequest") and "spec.hostname" in body["message"]


def test_a_nodes_pods_follow_binds_deletes_namespaces_and_pages(kube_api: EmbeddedKubeAPI) -> None:
    _call(kube_api, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    for index in range(12):
        namespace = "team" if index % 3 == 0 else "default"
        node = ("n1", "n2", None)[index % 3]
        _call(kube_api, "POST", f"/api/v1/namespaces/{namespace}/pods", _pod(f"p{index:02}", node))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p02"}, "target": {"name": "n1"}}
    assert _call(kube_api, "POST", "/api/v1/namespaces/default/pods/p02/binding", binding)[0] == 201
    assert _call(kube_api, "DELETE", "/api/v1/namespaces/default/pods/p01")[0] == 200

    def scanned(node: str, namespace: str | None = None) -> list[str]:  # every pod, filtered here
        _, body, _ = _call(kube_api, "GET", "/api/v1/pods")
        return [
            item["metadata"]["name"]
            for item in body["items"]
            if (item["spec"].get("nodeName") or "") == node
            and namespace in (None, item["metadata"]["namespace"])
        ]

    def listed(path: str) -> list[str]:
        code, body, _ = _call(kube_api, "GET", path)
        assert code == 200, body
        return _names(body)

    for node in ("n1", "n2", "", "n9"):
        assert listed(f"/api/v1/pods?fieldSelector=spec.nodeName={node}") == scanned(node)
        selected = f"/api/v1/namespaces/team/pods?fieldSelector=spec.nodeName={node}"
        assert listed(selected) == scanned(node, "team")
    assert "p02" in scanned("n1") and "p01" not in scanned("n2")
    pages, token = [], ""
    while True:
        _, body, _ = _call(
            kube_api, "GET", f"/api/v1/pods?fieldSelector=spec.nodeName=n1&limit=2&continue={token}"
        )
        pages.append(_names(body))
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert [name for page in pages for name in page] == scanned("n1") and len(pages) > 1


def test_metadata_only_lists_page_and_watch_like_full_ones(kube_api: EmbeddedKubeAPI) -> None:
    for index in range(5):
        body = {"metadata": {"name": f"n{index}", "labels": {"i": str(index)}}}
        _call(kube_api, "POST", "/api/v1/nodes", body)
    code, page, _ = _call(kube_api, "GET", "/api/v1/nodes?limit=3", accept=METADATA_LIST)
    assert (code, page["kind"], page["apiVersion"]) == (200, "PartialObjectMetadataList", "meta.k8s.io/v1")
    assert [item["kind"] for item in page["items"]] == ["PartialObjectMetadata"] * 3
    assert set(page["items"][0]) == {"kind", "apiVersion", "metadata"}
    assert page["items"][0]["metadata"]["labels"] == {"i": "0"} and page["metadata"]["continue"]
    rest = _call(
        kube_api,
        "GET",
        f"/api/v1/nodes?limit=3&continue={page['metadata']['continue']}",
        accept=METADATA_LIST,
    )
    assert _names(rest[1]) == ["n3", "n4"] and "continue" not in rest[1]["metadata"]
    version = page["metadata"]["resourceVersion"]
    _call(kube_api, "POST", "/api/v1/nodes", {"metadata": {"name": "n9"}})
    connection = http.client.HTTPConnection("127.0.0.1", kube_api.port, timeout=10)
    connection.request(
        "GET",
        f"/api/v1/nodes?watch=1&resourceVersion={version}&timeoutSeconds=1",
        headers={"Accept": METADATA_LIST},
    )
    event = json.loads(connection.getresponse().readline())
    connection.close()
    assert (event["type"], event["object"]["kind"], event["object"]["metadata"]["name"]) == (
        "ADDED",
        "PartialObjectMetadata",
        "n9",
    )


def test_resource_version_semantics_of_a_list(kube_api: EmbeddedKubeAPI) -> None:
    for index in range(4):
        _call(kube_api, "POST", "/api/v1/nodes", {"metadata": {"name": f"n{index}"}})
    current = _call(kube_api, "GET", "/api/v1/nodes")[1]["metadata"]["resourceVersion"]
    # 0: any version — the newest here, whole: a limit is ignored and no continue is given
    code, whole, _ = _call(kube_api, "GET", "/api/v1/nodes?resourceVersion=0&limit=2")
    assert code == 200 and _names(whole) == ["n0", "n1", "n2", "n3"] and "continue" not in whole["metadata"]
    # a paged list at a named version without a match is Exact: fine at the current one …
    code, exact, _ = _call(kube_api, "GET", f"/api/v1/nodes?resourceVersion={current}&limit=2")
    assert code == 200 and _names(exact) == ["n0", "n1"] and exact["metadata"]["continue"]
    # … 410 at an older one (no old snapshots are kept), as with resourceVersionMatch=Exact
    older = str(int(current) - 1)
    for query in (f"resourceVersion={older}&limit=2", f"resourceVersion={older}&resourceVersionMatch=Exact"):
        code, gone, _ = _call(kube_api, "GET", f"/api/v1/nodes?{query}")
        assert (code, gone["reason"]) == (410, "Expired"), query
    # an older version without a limit, or NotOlderThan, is served the newest state
    for query in (
        f"resourceVersion={older}",
        f"resourceVersion={older}&resourceVersionMatch=NotOlderThan&limit=2",
    ):
        code, served, _ = _call(kube_api, "GET", f"/api/v1/nodes?{query}")
        assert code == 200 and served["metadata"]["resourceVersion"] == current, query


def _node(name: str, ready: str | None, unschedulable: bool = False) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": name},
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": conditions},
    }


def test_a_node_rows_status_is_what_print_node_writes(kube_api: EmbeddedKubeAPI) -> None:
    for body in (
        _node("a-ready", "True"),
        _node("b-false", "False"),
        _node("c-unknown", "Unknown"),
        _node("d-none", None),
        _node("e-cordoned", "True", unschedulable=True),
    ):
        _call(kube_api, "POST", "/api/v1/nodes", body)
    code, table, _ = _call(kube_api, "GET", "/api/v1/nodes", accept=TABLE)
    assert code == 200 and table["kind"] == "Table"
    status = [c["name"] for c in table["columnDefinitions"]].index("Status")
    assert {row["object"]["metadata"]["name"]: row["cells"][status] for row in table["rows"]} == {
        "a-ready": "Ready",
        "b-false": "NotReady",
        "c-unknown": "NotReady",
        "d-none": "Unknown",
        "e-cordoned": "Ready,SchedulingDisabled",
    }


def test_custom_resource_cells_are_typed_and_null_when_missing(kube_api: EmbeddedKubeAPI) -> None:
    rt = kube_api.cluster.resolve("tensor-fusion.ai", "v1", "gpunodes")
    for name, status in (
        ("full", {"phase": "Running", "totalTFlops": "1000", "totalGPUs": 8}),
        ("bare", None),
    ):
        stored = kube_api.cluster.create(
            rt, None, {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUNode", "metadata": {"name": name}}
        )
        if status:
            kube_api.cluster.update(rt, "", name, {**stored, "status": status}, subresource="status")
    code, table, _ = _call(kube_api, "GET", "/apis/tensor-fusion.ai/v1/gpunodes", accept=TABLE)
    assert code == 200
    names = [c["name"] for c in table["columnDefinitions"]]
    rows = {
        row["object"]["metadata"]["name"]: dict(zip(names, row["cells"], strict=True))
        for row in table["rows"]
    }
    assert (rows["full"]["Phase"], rows["full"]["Total TFlops"], rows["full"]["GPU Count"]) == (
        "Running",
        "1000",
        8,
    )
    assert rows["full"]["Total VRAM"] is None
    assert all(rows["bare"][c] is None for c in ("Phase", "Total TFlops", "GPU Count"))


def test_a_status_body_has_upstreams_key_order_and_a_trailing_newline(kube_api: EmbeddedKubeAPI) -> None:
    _call(kube_api, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}})
    code, body, raw = _call(
        kube_api, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}}
    )
    assert code == 409 and raw.endswith(b"}\n")
    assert list(body) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]
    assert list(body["details"]) == ["name", "kind"]
    assert _call(kube_api, "GET", "/api/v1/namespaces/default/configmaps/cm")[2].endswith(b"}\n")


def _rc(name: str, **spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }


def test_a_replication_controller_takes_its_selector_and_labels_from_its_template(
    kube_api: EmbeddedKubeAPI,
) -> None:
    path = "/api/v1/namespaces/default/replicationcontrollers"
    code, created, _ = _call(kube_api, "POST", path, _rc("web"))
    assert code == 201, created
    assert created["spec"]["selector"] == {"app": "web"} and created["metadata"]["labels"] == {"app": "web"}
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["template"]["spec"]["restartPolicy"] == "Always"  # the pod template's defaults
    code, listed, _ = _call(kube_api, "GET", "/api/v1/replicationcontrollers")
    assert (code, listed["kind"], _names(listed)) == (200, "ReplicationControllerList", ["web"])
    changed = {**created, "spec": {**created["spec"], "selector": {"app": "web", "tier": "x"}}}
    changed["spec"]["template"]["metadata"]["labels"] = {"app": "web", "tier": "x"}
    assert _call(kube_api, "PUT", f"{path}/web", changed)[0] == 200  # a v1 selector may change


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"selector": {"app": "other"}}, "spec.template.metadata.labels"),
        ({"replicas": -1}, "spec.replicas"),
    ],
)
def test_an_invalid_replication_controller_is_refused(
    kube_api: EmbeddedKubeAPI, spec: dict[str, Any], field: str
) -> None:
    code, body, _ = _call(
        kube_api, "POST", "/api/v1/namespaces/default/replicationcontrollers", _rc("web", **spec)
    )
    assert (code, body["reason"]) == (422, "Invalid"), body
    assert field in json.dumps(body["details"]["causes"])
    assert _names(_call(kube_api, "GET", "/api/v1/replicationcontrollers")[1]) == []
