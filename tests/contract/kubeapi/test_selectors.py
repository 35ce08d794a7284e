"""Label selectors (=, ==, !=, in, notin, exists, !exists) and field selectors
(metadata.name, metadata.namespace, spec.nodeName, status.phase) through CoreV1Api."""

from __future__ import annotations

import pytest
from kubeapi_builders import pod, status_body
from kubernetes import client
from kubernetes.client.exceptions import ApiException


@pytest.fixture
def pods(core: client.CoreV1Api) -> client.CoreV1Api:
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_pod("default", pod("a", labels={"app": "web", "tier": "front"}, node="n1"))
    core.create_namespaced_pod("default", pod("b", labels={"app": "web", "tier": "back"}))
    core.create_namespaced_pod("default", pod("c", labels={"app": "db"}, node="n2"))
    core.create_namespaced_pod("other", pod("d", labels={"tier": "front"}, node="n1"))
    core.patch_namespaced_pod_status("c", "default", {"status": {"phase": "Running"}})
    return core


def _names(pod_list: client.V1PodList) -> list[str]:
    return sorted(item.metadata.name for item in pod_list.items)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("tier in (front,back)", ["a", "b", "d"]),
        ("tier notin (front)", ["b", "c"]),
        ("tier", ["a", "b", "d"]),
        ("!tier", ["c"]),
        ("app=web,tier=front", ["a"]),
        ("app in (web, db),!tier", ["c"]),
        ("", ["a", "b", "c", "d"]),
    ],
)
def test_label_selectors(pods: client.CoreV1Api, selector: str, expected: list[str]) -> None:
    assert _names(pods.list_pod_for_all_namespaces(label_selector=selector)) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("metadata.name=b", ["b"]),
        ("metadata.namespace=other", ["d"]),
        ("metadata.namespace!=other", ["a", "b", "c"]),
        ("spec.nodeName=n1", ["a", "d"]),
        ("spec.nodeName=", ["b"]),
        ("status.phase=Running", ["c"]),
        ("status.phase!=Running,spec.nodeName==n1", ["a", "d"]),
    ],
)
def test_field_selectors(pods: client.CoreV1Api, selector: str, expected: list[str]) -> None:
    assert _names(pods.list_pod_for_all_namespaces(field_selector=selector)) == expected


def test_selectors_combine_within_a_namespace(pods: client.CoreV1Api) -> None:
    found = pods.list_namespaced_pod(
        "default", label_selector="tier=front", field_selector="spec.nodeName=n1"
    )
    assert _names(found) == ["a"]


def test_unsupported_field_is_400(pods: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        pods.list_pod_for_all_namespaces(field_selector="spec.hostname=x")
    assert raised.value.status == 400 and status_body(raised.value)["reason"] == "BadRequest"


@pytest.mark.parametrize("selector", ["app in (web", "app=we b", "bad key!=x", "app notin web"])
def test_malformed_label_selector_is_400(pods: client.CoreV1Api, selector: str) -> None:
    with pytest.raises(ApiException) as raised:
        pods.list_pod_for_all_namespaces(label_selector=selector)
    assert raised.value.status == 400
