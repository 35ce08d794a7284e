"""What `KubeCluster`'s lists ask the API server for, recorded request by request on the embedded
server: pages of 500 following `continue`; the worker label selector and the `spec.nodeName` field
selector sent, not filtered here; a second list of the same kind asks for metadata only (in pages
of 5,000) and GETs
just the object that changed — and still returns every object, the changed one as it is now."""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gpupool.adapters.kube import KubeCluster
from gpupool.adapters.kube_reader import METADATA_LIST, METADATA_PAGE_SIZE, PAGE_SIZE
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

MERGE = "application/merge-patch+json"


class Requests:
    """Every request the client sends: (method, path, query, Accept header)."""

    def __init__(self, api_client: Any) -> None:
        self.sent: list[tuple[str, str, dict[str, list[str]], str]] = []
        self._lock = threading.Lock()
        rest = api_client.rest_client
        original = rest.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            parts = urlsplit(url)
            accept = str((kwargs.get("headers") or {}).get("Accept", ""))
            with self._lock:
                self.sent.append((method, parts.path, parse_qs(parts.query), accept))
            return original(method, url, *args, **kwargs)

        rest.request = request


def _node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, node: str, *, worker: bool) -> dict[str, Any]:
    labels = {"tensor-fusion.ai/enabled": "true", "tensor-fusion.ai/component": "worker"} if worker else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
    }


def test_lists_are_paged_and_follow_continue(kube_api: EmbeddedKubeAPI, api_client: Any) -> None:
    nodes = kube_api.cluster.resolve("", "v1", "nodes")
    for index in range(PAGE_SIZE + 3):
        kube_api.cluster.create(nodes, None, _node(f"n{index:04d}"))
    requests = Requests(api_client)
    listed = KubeCluster(api_client).list_nodes()
    assert [n.name for n in listed] == [f"n{index:04d}" for index in range(PAGE_SIZE + 3)]
    queries = [query for method, path, query, _ in requests.sent if path == "/api/v1/nodes"]
    assert [q.get("limit") for q in queries] == [[str(PAGE_SIZE)], [str(PAGE_SIZE)]]
    assert "continue" not in queries[0] and queries[1]["continue"]


def test_pod_selectors_are_sent_to_the_server(kube_api: EmbeddedKubeAPI, api_client: Any) -> None:
    pods = kube_api.cluster.resolve("", "v1", "pods")
    kube_api.cluster.create(pods, "default", _pod("w1", "n1", worker=True))
    kube_api.cluster.create(pods, "default", _pod("d1", "n1", worker=False))
    kube_api.cluster.create(pods, "default", _pod("w2", "n2", worker=True))
    requests = Requests(api_client)
    cluster = KubeCluster(api_client)
    assert [p.name for p in cluster.list_pods(worker_only=True)] == ["w1", "w2"]
    assert [p.name for p in cluster.list_pods(node_name="n1")] == ["d1", "w1"]
    selectors = [(q.get("labelSelector"), q.get("fieldSelector")) for _, _, q, _ in requests.sent]
    assert selectors == [
        (["tensor-fusion.ai/enabled=true,tensor-fusion.ai/component=worker"], None),
        (None, ["spec.nodeName=n1"]),
    ]


def test_a_second_list_reads_metadata_then_only_the_changed_object(
    kube_api: EmbeddedKubeAPI, api_client: Any
) -> None:
    nodes = kube_api.cluster.resolve("", "v1", "nodes")
    for index in range(30):
        kube_api.cluster.create(nodes, None, _node(f"n{index:02d}"))
    cluster = KubeCluster(api_client)
    first = cluster.list_nodes()
    kube_api.cluster.patch(nodes, "", "n07", {"spec": {"unschedulable": True}}, MERGE, subresource=None)
    requests = Requests(api_client)
    second = cluster.list_nodes()
    assert [(method, path, accept == METADATA_LIST) for method, path, _, accept in requests.sent] == [
        ("GET", "/api/v1/nodes", True),
        ("GET", "/api/v1/nodes/n07", False),
    ]
    assert requests.sent[0][2]["limit"] == [str(METADATA_PAGE_SIZE)]
    assert [n.name for n in second] == [n.name for n in first]
    assert second[7].spec.unschedulable and not first[7].spec.unschedulable
    assert second[8] is first[8]
