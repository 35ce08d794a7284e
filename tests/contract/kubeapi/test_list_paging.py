"""Paged lists as kube-apiserver pages them: `limit` / `continue` in key order with selectors and
with the metadata-only and Table formats; `remainingItemCount` only when no selector filters the
list (upstream sets it only then); a write between two lists is seen by the next (the server keeps
each resource's key order until it changes)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from kubeapi_builders import http_call, node, pod

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

METADATA = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"


def _pages(api: EmbeddedKubeAPI, path: str, *, limit: int, accept: str = "application/json") -> list[Any]:
    pages: list[Any] = []
    token = ""
    while True:
        query = f"limit={limit}" + (f"&continue={quote(token)}" if token else "")
        separator = "&" if "?" in path else "?"
        code, body, _ = http_call(api.port, "GET", f"{path}{separator}{query}", accept=accept)
        assert code == 200, body
        pages.append(body)
        token = body["metadata"].get("continue", "")
        if not token:
            return pages


def _names(page: Any) -> list[str]:
    rows = page.get("items", page.get("rows"))
    return [(row.get("object") or row)["metadata"]["name"] for row in rows]


def _create_pods(api: EmbeddedKubeAPI, count: int) -> None:
    for index in range(count):
        labels = {"role": "worker" if index % 3 == 0 else "other"}
        code, body, _ = http_call(
            api.port, "POST", "/api/v1/namespaces/default/pods", pod(f"p{index:02d}", labels=labels)
        )
        assert code == 201, body


def test_pages_without_a_selector_count_what_remains(kube_api: EmbeddedKubeAPI) -> None:
    _create_pods(kube_api, 10)
    pages = _pages(kube_api, "/api/v1/pods", limit=4)
    assert [_names(p) for p in pages] == [
        ["p00", "p01", "p02", "p03"],
        ["p04", "p05", "p06", "p07"],
        ["p08", "p09"],
    ]
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [6, 2, None]


def test_pages_with_a_label_selector_hold_only_matches_and_no_remaining_count(
    kube_api: EmbeddedKubeAPI,
) -> None:
    _create_pods(kube_api, 10)
    pages = _pages(kube_api, "/api/v1/pods?labelSelector=role%3Dworker", limit=2)
    assert [name for page in pages for name in _names(page)] == ["p00", "p03", "p06", "p09"]
    assert all(len(_names(page)) <= 2 for page in pages)
    assert all("remainingItemCount" not in page["metadata"] for page in pages)


def test_pages_with_a_field_selector(kube_api: EmbeddedKubeAPI) -> None:
    for index in range(6):
        body = pod(f"q{index}", node="n1" if index % 2 else "n2")
        assert http_call(kube_api.port, "POST", "/api/v1/namespaces/default/pods", body)[0] == 201
    pages = _pages(kube_api, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", limit=1)
    assert [name for page in pages for name in _names(page)] == ["q1", "q3", "q5"]


def test_metadata_only_and_table_lists_page_too(kube_api: EmbeddedKubeAPI) -> None:
    _create_pods(kube_api, 5)
    for accept, kind in ((METADATA, "PartialObjectMetadataList"), (TABLE, "Table")):
        pages = _pages(kube_api, "/api/v1/pods", limit=2, accept=accept)
        assert {page["kind"] for page in pages} == {kind}
        assert [name for page in pages for name in _names(page)] == ["p00", "p01", "p02", "p03", "p04"]
        assert [p["metadata"].get("remainingItemCount") for p in pages] == [3, 1, None]
    first = _pages(kube_api, "/api/v1/pods", limit=5, accept=METADATA)[0]["items"][0]
    assert set(first) == {"kind", "apiVersion", "metadata"}  # names, uids, versions, labels: no spec


def test_a_write_between_lists_is_in_the_next_list(kube_api: EmbeddedKubeAPI) -> None:
    for name in ("b", "d"):
        assert http_call(kube_api.port, "POST", "/api/v1/nodes", node(name))[0] == 201
    assert _names(_pages(kube_api, "/api/v1/nodes", limit=10)[0]) == ["b", "d"]
    assert http_call(kube_api.port, "POST", "/api/v1/nodes", node("a"))[0] == 201
    assert http_call(kube_api.port, "DELETE", "/api/v1/nodes/d")[0] == 200
    assert _names(_pages(kube_api, "/api/v1/nodes", limit=10)[0]) == ["a", "b"]


def test_a_bad_continue_token_is_a_400_and_lists_nothing(kube_api: EmbeddedKubeAPI) -> None:
    code, body, _ = http_call(kube_api.port, "GET", "/api/v1/pods?limit=1&continue=not-a-token")
    assert code == 400 and body["reason"] == "BadRequest"
