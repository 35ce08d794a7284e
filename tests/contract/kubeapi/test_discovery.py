"""Discovery as the official client reads it: /version, /api, /apis, /api/v1 and
/apis/GROUP/VERSION, including the pod subresources and unknown paths answering 404."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException


def test_version(api_client: client.ApiClient) -> None:
    info = client.VersionApi(api_client).get_code()
    assert (info.major, info.minor) == ("1", "30")


def test_core_versions(api_client: client.ApiClient) -> None:
    assert client.CoreApi(api_client).get_api_versions().versions == ["v1"]


def test_group_list_names_every_served_group(api_client: client.ApiClient) -> None:
    groups = {
        g.name: g.preferred_version.version for g in client.ApisApi(api_client).get_api_versions().groups
    }
    for name in (
        "apiextensions.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "policy",
        "karpenter.sh",
        "karpenter.k8s.aws",
        "tensor-fusion.ai",
    ):
        assert groups[name] == "v1"


def test_core_resources_with_subresources(core: client.CoreV1Api) -> None:
    resources = {r.name: r for r in core.get_api_resources().resources}
    assert {
        "namespaces",
        "nodes",
        "nodes/status",
        "pods",
        "pods/status",
        "pods/binding",
        "pods/eviction",
        "events",
        "configmaps",
        "secrets",
    } <= set(resources)
    assert resources["pods"].namespaced and not resources["nodes"].namespaced
    assert resources["pods/eviction"].group == "policy" and resources["pods/eviction"].kind == "Eviction"
    assert "watch" in resources["pods"].verbs


def test_group_version_resources(api_client: client.ApiClient) -> None:
    leases = client.CoordinationV1Api(api_client).get_api_resources()
    assert [(r.name, r.kind, r.namespaced) for r in leases.resources] == [("leases", "Lease", True)]
    group = client.CoordinationApi(api_client).get_api_group()
    assert group.preferred_version.group_version == "coordination.k8s.io/v1"


def test_unknown_resource_is_404(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as raised:
        custom.list_cluster_custom_object("nothing.example", "v1", "things")
    assert raised.value.status == 404
