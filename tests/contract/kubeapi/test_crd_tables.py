"""A custom resource's Table as apiextensions-apiserver serves it: Name described by ObjectMeta's
documentation, then the CRD version's own columns (Age alone when it declares none, not added
beside them), each described by its description or its path; JSONPath cells with escaped dots and
condition filters, the first value a path selects — Karpenter's NodeClaim columns included."""

from __future__ import annotations

import http.client
import json
from typing import Any

from kubeapi_builders import http_call

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.crd import CREATION_TIMESTAMP_DOC
from gpupool.sandbox.kubeapi.jsonpath import find
from gpupool.sandbox.kubeapi.tables import NAME_DOC

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
CLAIM = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {
        "name": "c",
        "labels": {"node.kubernetes.io/instance-type": "g5.xlarge", "karpenter.sh/capacity-type": "spot"},
    },
    "spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}
        ],
    },
}


def _table(api: EmbeddedKubeAPI, path: str) -> dict[str, Any]:
    status, table, _ = http_call(api.port, "GET", path, accept=TABLE)
    assert status == 200, table
    return table


def test_a_nodeclaim_prints_karpenters_columns(kube_api: EmbeddedKubeAPI) -> None:
    http_call(kube_api.port, "POST", NODECLAIMS, CLAIM)
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "",
        "lastTransitionTime": "2026-03-01T12:00:00Z",
    }
    http_call(
        kube_api.port,
        "PATCH",
        f"{NODECLAIMS}/c/status",
        {"status": {"conditions": [ready], "nodeName": "n1"}},
        content_type="application/merge-patch+json",
    )
    table = _table(kube_api, f"{NODECLAIMS}/c")
    columns = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns[:7] == [
        ("Name", 0),
        ("Type", 0),
        ("Capacity", 0),
        ("Zone", 0),
        ("Node", 0),
        ("Ready", 0),
        ("Age", 0),
    ]
    assert ("Drifted", 1) in columns
    assert table["columnDefinitions"][0]["description"] == NAME_DOC
    assert table["columnDefinitions"][1]["description"] == (
        "Custom resource definition column (in JSONPath format): "
        ".metadata.labels.node\\.kubernetes\\.io/instance-type"
    )
    assert table["rows"][0]["cells"][:6] == ["c", "g5.xlarge", "spot", None, "n1", "True"]


def test_a_crd_without_columns_prints_age_alone_and_with_columns_no_extra_age(
    kube_api: EmbeddedKubeAPI,
) -> None:
    ec2 = _table(kube_api, "/apis/karpenter.k8s.aws/v1/ec2nodeclasses")
    assert [(c["name"], c["description"]) for c in ec2["columnDefinitions"]] == [
        ("Name", NAME_DOC),
        ("Age", CREATION_TIMESTAMP_DOC),
    ]
    classes = _table(kube_api, "/apis/tensor-fusion.ai/v1/gpunodeclasses")
    assert [c["name"] for c in classes["columnDefinitions"]] == ["Name", "Age"]


def test_jsonpath_reads_as_client_go_reads() -> None:
    obj = {"a": {"b.c": 1, "l": [{"t": "x", "v": 1}, {"t": "y", "v": 2}, {"t": "y", "v": 3}]}}
    assert find(obj, ".a.b\\.c") == [1]
    assert find(obj, '.a.l[?(@.t=="y")].v') == [2, 3]
    assert find(obj, ".a.l[*].t") == ["x", "y", "y"] and find(obj, ".a.l[-1].v") == [3]
    assert find(obj, ".a.missing") == [] and find(obj, ".a[") == []


def test_a_table_watch_announces_the_columns_once_then_null(kube_api: EmbeddedKubeAPI) -> None:
    """Upstream sets NoHeaders after the first event: later tables carry `columnDefinitions: null`."""
    for name in ("a", "b"):
        http_call(kube_api.port, "POST", NODECLAIMS, {**CLAIM, "metadata": {"name": name}})
    connection = http.client.HTTPConnection("127.0.0.1", kube_api.port, timeout=10)
    connection.request("GET", f"{NODECLAIMS}?watch=1&timeoutSeconds=1", headers={"Accept": TABLE})
    events = [json.loads(line) for line in connection.getresponse().read().splitlines() if line.strip()]
    connection.close()
    assert [e["object"]["rows"][0]["cells"][0] for e in events] == ["a", "b"]
    assert events[0]["object"]["columnDefinitions"] and events[1]["object"]["columnDefinitions"] is None
