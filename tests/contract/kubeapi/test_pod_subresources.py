"""Pod subresources: binding assigns a node once and answers a Success Status (as upstream, so
the official client needs `_preload_content=False`, as the relay passes); eviction (policy/v1)
deletes a pod with 201 unless a PodDisruptionBudget in its namespace forbids it (429)."""

from __future__ import annotations

import json

import pytest
from kubeapi_builders import pod, status_body
from kubernetes import client
from kubernetes.client.exceptions import ApiException


def _binding(name: str, node: str) -> client.V1Binding:
    return client.V1Binding(
        metadata=client.V1ObjectMeta(name=name), target=client.V1ObjectReference(kind="Node", name=node)
    )


def test_binding_assigns_a_node_once(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("p"))
    response = core.create_namespaced_pod_binding("p", "default", _binding("p", "n1"), _preload_content=False)
    assert response.status == 201
    answer = json.loads(response.data)
    assert (answer["kind"], answer["status"], answer["code"]) == ("Status", "Success", 201)
    bound = core.read_namespaced_pod("p", "default")
    assert bound.spec.node_name == "n1"
    assert [(c.type, c.status) for c in bound.status.conditions] == [("PodScheduled", "True")]
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod_binding("p", "default", _binding("p", "n2"), _preload_content=False)
    assert raised.value.status == 409


def _running(core: client.CoreV1Api, name: str) -> None:
    core.create_namespaced_pod("default", pod(name, labels={"app": "web"}))
    core.patch_namespaced_pod_status(name, "default", {"status": {"phase": "Running"}})


def _evict(core: client.CoreV1Api, name: str) -> int:
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace="default"))
    _body, code, _headers = core.create_namespaced_pod_eviction_with_http_info(name, "default", eviction)
    return int(code)


def test_eviction_deletes_the_pod(core: client.CoreV1Api) -> None:
    _running(core, "p")
    assert _evict(core, "p") == 201
    assert core.list_namespaced_pod("default").items == []


def test_eviction_honours_pod_disruption_budgets(
    core: client.CoreV1Api, api_client: client.ApiClient
) -> None:
    client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    for name in ("a", "b", "c"):
        _running(core, name)
    assert _evict(core, "a") == 201
    with pytest.raises(ApiException) as raised:
        _evict(core, "b")
    assert raised.value.status == 429 and status_body(raised.value)["reason"] == "TooManyRequests"
    assert sorted(p.metadata.name for p in core.list_namespaced_pod("default").items) == ["b", "c"]


def test_eviction_of_missing_pod_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        _evict(core, "ghost")
    assert raised.value.status == 404
