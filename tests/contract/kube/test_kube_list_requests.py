"""What `KubeCluster`'s reads ask the API server for, recorded request by request on the embedded
server: pages of 500 following `continue`; the pod field selectors (`spec.nodeName`, `status.phase`)
and the node label selector sent, not filtered here; node summaries read as Table rows; a second
read of a kept kind is a watch from the list's resourceVersion that returns every object, the
changed one as it is now and the others as the same objects; a watch the server's history no
longer reaches (410) lists in full again; GPUNode summaries are Table rows, or whole objects trimmed
to a row's fields when the server's GPUNode table lacks a printer column a row is read from."""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gpupool.adapters.kube.auth import KubeAccess, build_api_client
from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.adapters.kube.reader import KEPT_PAGE_SIZE, PAGE_SIZE
from gpupool.adapters.kube.tables import TABLE
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.server import gpupool_crds

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


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _pod(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec}


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


def test_selectors_are_sent_to_the_server(kube_api: EmbeddedKubeAPI, api_client: Any) -> None:
    pods = kube_api.cluster.resolve("", "v1", "pods")
    kube_api.cluster.create(pods, "default", _pod("w1", "n1"))
    kube_api.cluster.create(pods, "default", _pod("d1", "n1"))
    kube_api.cluster.create(pods, "default", _pod("waiting", None))
    nodes = kube_api.cluster.resolve("", "v1", "nodes")
    kube_api.cluster.create(nodes, None, _node("gpu", **{"nvidia.com/gpu.present": "true"}))
    kube_api.cluster.create(nodes, None, _node("cpu"))
    requests = Requests(api_client)
    cluster = KubeCluster(api_client)
    assert [p.name for p in cluster.list_pods(node_name="n1")] == ["d1", "w1"]
    assert [p.name for p in cluster.list_pods(node_name="", phase="Pending")] == ["waiting"]
    assert [n.name for n in cluster.list_nodes(labels={"nvidia.com/gpu.present": "true"})] == ["gpu"]
    selectors = [(q.get("labelSelector"), q.get("fieldSelector")) for _, _, q, _ in requests.sent]
    assert selectors == [
        (None, ["spec.nodeName=n1"]),
        (None, ["spec.nodeName=,status.phase=Pending"]),
        (["nvidia.com/gpu.present=true"], None),
    ]


def test_a_second_read_watches_from_the_list_and_keeps_what_did_not_change(
    kube_api: EmbeddedKubeAPI, api_client: Any
) -> None:
    nodes = kube_api.cluster.resolve("", "v1", "nodes")
    for index in range(30):
        kube_api.cluster.create(nodes, None, _node(f"n{index:02d}"))
    cluster = KubeCluster(api_client)
    requests = Requests(api_client)
    first = cluster.list_nodes(summary=True)
    listed_at = kube_api.cluster.store.resource_version
    kube_api.cluster.patch(nodes, "", "n07", {"spec": {"unschedulable": True}}, MERGE, subresource=None)
    second = cluster.list_nodes(summary=True)
    (_m1, _p1, listing, list_accept), (_m2, path, watching, watch_accept) = requests.sent
    assert list_accept == TABLE and watch_accept == TABLE and path == "/api/v1/nodes"
    assert "watch" not in listing and listing["limit"] == [str(KEPT_PAGE_SIZE)]
    assert watching["watch"] == ["true"] and watching["resourceVersion"] == [str(listed_at)]
    assert watching["allowWatchBookmarks"] == ["true"] and watching["timeoutSeconds"]
    assert [n.name for n in second] == [n.name for n in first]
    assert second[7].spec.unschedulable and not first[7].spec.unschedulable
    assert second[8] is first[8]


def test_an_expired_resource_version_lists_in_full_again() -> None:
    with EmbeddedKubeAPI(watch_history=2) as api:
        access = KubeAccess(mode="kubeconfig", kubeconfig_path=str(api.kubeconfig_path))
        api_client = build_api_client(access)
        nodes = api.cluster.resolve("", "v1", "nodes")
        api.cluster.create(nodes, None, _node("n0"))
        cluster = KubeCluster(api_client)
        assert [n.name for n in cluster.list_nodes(summary=True)] == ["n0"]
        for index in range(1, 8):  # more changes than the server's history keeps
            api.cluster.create(nodes, None, _node(f"n{index}"))
        requests = Requests(api_client)
        again = cluster.list_nodes(summary=True)
        assert [n.name for n in again] == [f"n{index}" for index in range(8)]
        assert ["watch" in q for _, _, q, _ in requests.sent] == [True, False]


def _gpu_node(name: str, available: str) -> dict[str, Any]:
    status = {"phase": "Running", "totalTFlops": "125", "totalVRAM": "24Gi", "totalGPUs": 1}
    status |= {"availableTFlops": available, "availableVRAM": "24Gi", "nodeInfo": {"gpuModel": "A10G"}}
    return {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUNode",
        "metadata": {"name": name},
        "status": status,
    }


def _put_gpu_node(api: EmbeddedKubeAPI, body: dict[str, Any]) -> None:
    rt = api.cluster.resolve("tensor-fusion.ai", "v1", "gpunodes")
    stored = api.cluster.create(rt, None, {k: v for k, v in body.items() if k != "status"})
    api.cluster.update(
        rt, "", body["metadata"]["name"], {**stored, "status": body["status"]}, subresource="status"
    )


def test_gpu_node_summaries_are_table_rows_and_whole_objects_when_the_crd_prints_too_little() -> None:
    crds = gpupool_crds()
    for crd in crds:
        if crd["spec"]["names"]["plural"] == "gpunodes":
            for version in crd["spec"]["versions"]:
                version.pop("additionalPrinterColumns", None)
    for columns, crd_list in (("printed", gpupool_crds()), ("not printed", crds)):
        with EmbeddedKubeAPI(install_gpupool_crds=False, extra_crds=crd_list) as api:
            api_client = build_api_client(
                KubeAccess(mode="kubeconfig", kubeconfig_path=str(api.kubeconfig_path))
            )
            _put_gpu_node(api, _gpu_node("g1", "100"))
            cluster = KubeCluster(api_client)
            requests = Requests(api_client)
            first = cluster.list_gpu_nodes(summary=True)
            _put_gpu_node(api, _gpu_node("g2", "125"))
            second = cluster.list_gpu_nodes(summary=True)
            accepts = [accept for _, path, _, accept in requests.sent if path.endswith("/gpunodes")]
            assert [g.name for g in second] == ["g1", "g2"], columns
            assert [str(g.status.available_tflops) for g in second if g.status] == ["100", "125"], columns
            assert first[0].status is not None and first[0].status.node_info is None, (
                columns
            )  # a row's fields only
            if columns == "printed":
                assert accepts == [TABLE, TABLE]
            else:  # the Table lacks the columns: whole objects from then on, trimmed to a row's fields
                assert accepts[0] == TABLE and all(a != TABLE for a in accepts[1:]) and len(accepts) == 3
