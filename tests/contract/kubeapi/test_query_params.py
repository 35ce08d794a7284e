"""Query parameters over raw HTTP, parsed as kube-apiserver parses them: booleans in any form
clients send, integers, enumerated options; each bad value a 400 Status naming it, changing
nothing. Also: list order, resourceVersion too new (504) and resourceVersionMatch; the list
options (resourceVersionMatch, sendInitialEvents) checked on lists and watches only, as upstream's
ValidateListOptions does (422 Invalid ListOptions)."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from kubeapi_builders import pod

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI


def _call(api: EmbeddedKubeAPI, method: str, path: str, body: Any = None) -> tuple[int, Any, str]:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    data = json.dumps(body).encode() if body is not None else None
    connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return response.status, json.loads(raw), response.getheader("Transfer-Encoding") or ""


def _pods(api: EmbeddedKubeAPI) -> list[str]:
    return [p["metadata"]["name"] for p in _call(api, "GET", "/api/v1/namespaces/default/pods")[1]["items"]]


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "1", "yes"])
def test_any_true_form_starts_a_watch(kube_api: EmbeddedKubeAPI, value: str) -> None:
    _call(kube_api, "POST", "/api/v1/namespaces/default/pods", pod("p"))
    connection = http.client.HTTPConnection("127.0.0.1", kube_api.port, timeout=10)
    connection.request("GET", f"/api/v1/namespaces/default/pods?watch={value}&timeoutSeconds=30")
    response = connection.getresponse()
    first = json.loads(response.readline())
    connection.close()
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "p")


@pytest.mark.parametrize("value", ["false", "False", "0", ""])
def test_any_false_form_lists(kube_api: EmbeddedKubeAPI, value: str) -> None:
    code, body, encoding = _call(kube_api, "GET", f"/api/v1/namespaces/default/pods?watch={value}")
    assert (code, body["kind"], encoding) == (200, "PodList", "")


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("timeoutSeconds=soon", "timeoutSeconds"),
        ("limit=-1", "limit"),
        ("fieldValidation=Loose", "fieldValidation"),
        ("dryRun=Some", "dryRun"),
        ("propagationPolicy=Now", "propagationPolicy"),
    ],
)
def test_a_bad_parameter_is_a_400_status_naming_it(kube_api: EmbeddedKubeAPI, query: str, named: str) -> None:
    code, body, _ = _call(kube_api, "POST", f"/api/v1/namespaces/default/pods?{query}", pod("p"))
    assert (code, body["kind"], body["reason"]) == (400, "Status", "BadRequest")
    assert named in body["message"]
    assert _pods(kube_api) == []


def test_bookmarks_accept_any_true_form(kube_api: EmbeddedKubeAPI) -> None:
    rv = _call(kube_api, "GET", "/api/v1/namespaces/default/pods")[1]["metadata"]["resourceVersion"]
    connection = http.client.HTTPConnection("127.0.0.1", kube_api.port, timeout=10)
    connection.request(
        "GET",
        f"/api/v1/namespaces/default/pods?watch=True&allowWatchBookmarks=True&resourceVersion={rv}&timeoutSeconds=3",
    )
    lines = [json.loads(line) for line in connection.getresponse().read().splitlines() if line.strip()]
    assert [e["type"] for e in lines] == ["BOOKMARK"]


def test_send_initial_events_ends_with_an_annotated_bookmark(kube_api: EmbeddedKubeAPI) -> None:
    _call(kube_api, "POST", "/api/v1/namespaces/default/pods", pod("b"))
    _call(kube_api, "POST", "/api/v1/namespaces/default/pods", pod("a"))
    connection = http.client.HTTPConnection("127.0.0.1", kube_api.port, timeout=10)
    connection.request(
        "GET",
        "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&resourceVersion=1&timeoutSeconds=1",
    )
    lines = [json.loads(line) for line in connection.getresponse().read().splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in lines[:3]] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("BOOKMARK", None),
    ]
    assert lines[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_unpaged_lists_come_in_namespace_then_name_order(kube_api: EmbeddedKubeAPI) -> None:
    _call(kube_api, "POST", "/api/v1/namespaces", {"metadata": {"name": "alpha"}})
    for namespace, name in [("default", "zeta"), ("alpha", "omega"), ("default", "beta")]:
        _call(kube_api, "POST", f"/api/v1/namespaces/{namespace}/pods", pod(name))
    items = _call(kube_api, "GET", "/api/v1/pods")[1]["items"]
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items] == [
        ("alpha", "omega"),
        ("default", "beta"),
        ("default", "zeta"),
    ]


def test_a_too_new_resource_version_is_refused_as_upstream(kube_api: EmbeddedKubeAPI) -> None:
    kube_api.cluster.too_large_wait_seconds = 0.1
    for path in (
        "/api/v1/namespaces/default/pods?watch=true&resourceVersion=999999",
        "/api/v1/namespaces/default/pods?resourceVersion=999999&resourceVersionMatch=NotOlderThan",
    ):
        code, body, _ = _call(kube_api, "GET", path)
        assert (code, body["reason"]) == (504, "Timeout"), path
        assert body["message"].startswith("Too large resource version: 999999")
        assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_exact_match_on_an_old_version_is_gone(kube_api: EmbeddedKubeAPI) -> None:
    _call(kube_api, "POST", "/api/v1/namespaces/default/pods", pod("p"))
    code, body, _ = _call(kube_api, "GET", "/api/v1/pods?resourceVersion=1&resourceVersionMatch=Exact")
    assert (code, body["reason"]) == (410, "Expired")


@pytest.mark.parametrize(
    ("query", "causes"),
    [
        (
            "resourceVersionMatch=Exact",
            [
                (
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            ],
        ),
        (
            "resourceVersionMatch=Newest&resourceVersion=1",
            [
                (
                    "resourceVersionMatch",
                    'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""',
                )
            ],
        ),
        (
            "sendInitialEvents=true",
            [("sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list")],
        ),
        (
            "watch=1&resourceVersionMatch=Exact&resourceVersion=1",
            [
                (
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                ),
                ("resourceVersionMatch", 'Unsupported value: "Exact": supported values: "NotOlderThan"'),
            ],
        ),
        (
            "watch=1&sendInitialEvents=true",
            [
                (
                    "resourceVersionMatch",
                    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )
            ],
        ),
    ],
)
def test_list_options_are_checked_on_lists_and_watches_as_upstream(
    kube_api: EmbeddedKubeAPI, query: str, causes: list[tuple[str, str]]
) -> None:
    """apimachinery's ValidateListOptions: 422 Invalid for the nameless `ListOptions.meta.k8s.io`."""
    code, body, _ = _call(kube_api, "GET", f"/api/v1/namespaces/default/pods?{query}")
    assert (code, body["reason"], body["details"]["kind"], body["details"]["group"]) == (
        422,
        "Invalid",
        "ListOptions",
        "meta.k8s.io",
    )
    assert "name" not in body["details"] and body["message"].startswith(
        'ListOptions.meta.k8s.io "" is invalid: '
    )
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == causes


def test_a_watch_with_initial_events_needs_no_resource_version(kube_api: EmbeddedKubeAPI) -> None:
    _call(kube_api, "POST", "/api/v1/namespaces/default/pods", pod("p"))
    connection = http.client.HTTPConnection("127.0.0.1", kube_api.port, timeout=10)
    connection.request(
        "GET",
        "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&timeoutSeconds=1",
    )
    events = [json.loads(line) for line in connection.getresponse().read().splitlines() if line.strip()]
    assert [e["type"] for e in events][:2] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_a_create_ignores_list_options_as_upstream(kube_api: EmbeddedKubeAPI) -> None:
    code, _body, _ = _call(
        kube_api, "POST", "/api/v1/namespaces/default/pods?resourceVersionMatch=Exact", pod("p")
    )
    assert code == 201
