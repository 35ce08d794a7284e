"""Response formats and dry runs over raw HTTP: metadata-only gets and lists, Table watches,
`dryRun=All` on every kind of write (nothing stored, nothing watched), and the OpenAPI
documents kubectl reads (v3 index, one group version with schemas and PATCH parameters)."""

from __future__ import annotations

import http.client
import json

import pytest
from kubeapi_builders import http_call, pod

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

PODS = "/api/v1/namespaces/default/pods"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_metadata_only_get_and_list(kube_api: EmbeddedKubeAPI) -> None:
    http_call(kube_api.port, "POST", PODS, pod("b", labels={"app": "x"}))
    http_call(kube_api.port, "POST", PODS, pod("a"))
    accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    status, listed, _ = http_call(kube_api.port, "GET", PODS, accept=accept)
    assert (status, listed["kind"], listed["apiVersion"]) == (
        200,
        "PartialObjectMetadataList",
        "meta.k8s.io/v1",
    )
    assert [(i["kind"], i["metadata"]["name"], "spec" in i) for i in listed["items"]] == [
        ("PartialObjectMetadata", "a", False),
        ("PartialObjectMetadata", "b", False),
    ]
    single = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    got = http_call(kube_api.port, "GET", f"{PODS}/b", accept=single)[1]
    assert set(got) == {"kind", "apiVersion", "metadata"} and got["metadata"]["labels"] == {"app": "x"}


def test_a_table_watch_prints_rows(kube_api: EmbeddedKubeAPI) -> None:
    http_call(kube_api.port, "POST", PODS, pod("p"))
    connection = http.client.HTTPConnection("127.0.0.1", kube_api.port, timeout=10)
    connection.request("GET", f"{PODS}?watch=1&timeoutSeconds=30", headers={"Accept": TABLE})
    event = json.loads(connection.getresponse().readline())
    connection.close()
    assert (event["type"], event["object"]["kind"]) == ("ADDED", "Table")
    names = [c["name"] for c in event["object"]["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert event["object"]["rows"][0]["cells"][:3] == ["p", "0/1", "Pending"]


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type"),
    [
        ("POST", PODS, pod("new"), "application/json"),
        ("PATCH", f"{PODS}/p", {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json"),
        ("PATCH", f"{PODS}/p", b"metadata: {labels: {x: y}}", "application/apply-patch+yaml"),
        ("DELETE", f"{PODS}/p", None, "application/json"),
        ("POST", f"{PODS}/p/binding", {"target": {"kind": "Node", "name": "n1"}}, "application/json"),
        ("POST", f"{PODS}/p/eviction", {"metadata": {"name": "p"}}, "application/json"),
    ],
    ids=["create", "patch", "apply", "delete", "binding", "eviction"],
)
def test_dry_run_stores_nothing(
    kube_api: EmbeddedKubeAPI, method: str, path: str, body: object, content_type: str
) -> None:
    http_call(kube_api.port, "POST", PODS, pod("p"))
    before = http_call(kube_api.port, "GET", PODS)[1]
    query = "?dryRun=All" + ("&fieldManager=tester" if "apply" in content_type else "")
    status, answer, _ = http_call(kube_api.port, method, path + query, body, content_type=content_type)
    assert status in (200, 201, 202), answer
    assert http_call(kube_api.port, "GET", PODS)[1] == before


def test_dry_run_still_validates(kube_api: EmbeddedKubeAPI) -> None:
    bad = pod("p", restartPolicy="Sometimes")
    status, answer, _ = http_call(kube_api.port, "POST", PODS + "?dryRun=All", bad)
    assert (status, answer["reason"]) == (422, "Invalid")


def test_openapi_v3_documents_what_kubectl_reads(kube_api: EmbeddedKubeAPI) -> None:
    index = http_call(kube_api.port, "GET", "/openapi/v3")[1]["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/tensor-fusion.ai/v1"} <= set(index)
    url = index["apis/apps/v1"]["serverRelativeURL"]
    document = http_call(kube_api.port, "GET", url)[1]
    schemas = document["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert (
        deployment["properties"]["spec"]["$ref"] == "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
    )
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    patch = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= {p["name"] for p in patch["parameters"]}
    custom = http_call(kube_api.port, "GET", index["apis/tensor-fusion.ai/v1"]["serverRelativeURL"])[1]
    assert "ai.tensor-fusion.v1.GPUPool" in custom["components"]["schemas"]
    v2 = http_call(kube_api.port, "GET", "/openapi/v2")[1]
    assert v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["$ref"] == (
        "#/definitions/io.k8s.api.core.v1.PodSpec"
    )
