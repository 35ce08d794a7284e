"""CustomResourceDefinitions through ApiextensionsV1Api and CustomObjectsApi: creating one
makes its resource servable (namespaced and cluster-scoped) and discoverable; deleting it
removes the resource and its objects; gpupool's and Karpenter's CRDs are there at start."""

from __future__ import annotations

import pytest
from kubeapi_builders import crd, status_body
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpupool.core.model.crd import generate_crds

GROUP = "example.gpupool.dev"


def test_created_crd_is_established(apiext: client.ApiextensionsV1Api) -> None:
    created = apiext.create_custom_resource_definition(crd())
    assert created.metadata.name == f"widgets.{GROUP}"
    read = apiext.read_custom_resource_definition(f"widgets.{GROUP}")
    conditions = {c.type: c.status for c in read.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert read.status.stored_versions == ["v1"]


def test_namespaced_custom_resource_crud(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    apiext.create_custom_resource_definition(crd())
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}},
        "spec": {"n": 1},
    }
    created = custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", body)
    assert created["metadata"]["namespace"] == "default" and created["metadata"]["uid"]
    listed = custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets", label_selector="a=b")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["w"]
    assert listed["kind"] == "WidgetList"
    assert custom.list_cluster_custom_object(GROUP, "v1", "widgets")["items"][0]["metadata"]["name"] == "w"
    custom.delete_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w")
    with pytest.raises(ApiException) as raised:
        custom.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w")
    assert raised.value.status == 404
    assert status_body(raised.value)["details"] == {"name": "w", "kind": "widgets", "group": GROUP}


def test_cluster_scoped_custom_resource(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    apiext.create_custom_resource_definition(crd(kind="Gadget", plural="gadgets", scope="Cluster"))
    created = custom.create_cluster_custom_object(
        GROUP, "v1", "gadgets", {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    )
    assert "namespace" not in created["metadata"]
    assert (
        custom.get_cluster_custom_object(GROUP, "v1", "gadgets", "g")["metadata"]["uid"]
        == created["metadata"]["uid"]
    )


def test_kind_mismatch_is_400(apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi) -> None:
    apiext.create_custom_resource_definition(crd())
    with pytest.raises(ApiException) as raised:
        custom.create_namespaced_custom_object(
            GROUP,
            "v1",
            "default",
            "widgets",
            {"apiVersion": f"{GROUP}/v1", "kind": "Other", "metadata": {"name": "w"}},
        )
    assert raised.value.status == 400


def test_crd_appears_in_and_leaves_discovery(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi, api_client: client.ApiClient
) -> None:
    apis = client.ApisApi(api_client)
    assert GROUP not in [g.name for g in apis.get_api_versions().groups]
    apiext.create_custom_resource_definition(crd())
    assert GROUP in [g.name for g in apis.get_api_versions().groups]
    resources = custom.get_api_resources(GROUP, "v1")
    assert {(r.name, r.namespaced, r.kind) for r in resources.resources} == {
        ("widgets", True, "Widget"),
        ("widgets/status", True, "Widget"),
    }
    apiext.delete_custom_resource_definition(f"widgets.{GROUP}")
    assert GROUP not in [g.name for g in apis.get_api_versions().groups]


def test_deleting_crd_removes_its_objects(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    apiext.create_custom_resource_definition(crd())
    custom.create_namespaced_custom_object(
        GROUP,
        "v1",
        "default",
        "widgets",
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}},
    )
    apiext.delete_custom_resource_definition(f"widgets.{GROUP}")
    with pytest.raises(ApiException) as raised:
        custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")
    assert raised.value.status == 404
    apiext.create_custom_resource_definition(crd())
    assert custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")["items"] == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda c: c["metadata"].update(name="wrong.example.gpupool.dev"), "metadata.name"),
        (lambda c: c["spec"].update(scope="Galaxy"), "spec.scope"),
        (lambda c: c["spec"]["versions"][0].update(storage=False), "spec.versions"),
        (lambda c: c["spec"]["names"].update(kind="lowercase"), "spec.names.kind"),
    ],
)
def test_invalid_crd_is_422(apiext: client.ApiextensionsV1Api, change: object, field: str) -> None:
    manifest = crd()
    change(manifest)  # type: ignore[operator]
    with pytest.raises(ApiException) as raised:
        apiext.create_custom_resource_definition(manifest)
    assert raised.value.status == 422
    assert field in [cause["field"] for cause in status_body(raised.value)["details"]["causes"]]


def test_gpupool_and_karpenter_crds_are_installed_at_start(apiext: client.ApiextensionsV1Api) -> None:
    names = {item.metadata.name for item in apiext.list_custom_resource_definition().items}
    expected = {c["metadata"]["name"] for c in generate_crds()}
    assert expected and expected <= names
    assert {"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"} <= names


def test_karpenter_nodeclaim_round_trip(custom: client.CustomObjectsApi) -> None:
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "gpu-1"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "Exists"}],
        },
    }
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
    patched = custom.patch_cluster_custom_object_status(
        "karpenter.sh", "v1", "nodeclaims", "gpu-1", {"status": {"providerID": "aws:///us-east-1a/i-1"}}
    )
    assert patched["status"] == {"providerID": "aws:///us-east-1a/i-1"}
    assert patched["spec"] == {**claim["spec"], "expireAfter": "720h"}, "the CRD's default filled in"


def test_crd_scope_is_immutable(apiext: client.ApiextensionsV1Api) -> None:
    apiext.create_custom_resource_definition(crd())
    with pytest.raises(ApiException) as raised:
        apiext.patch_custom_resource_definition(f"widgets.{GROUP}", {"spec": {"scope": "Cluster"}})
    assert raised.value.status == 422
    assert "spec.scope" in [cause["field"] for cause in status_body(raised.value)["details"]["causes"]]


def test_crd_update_can_add_a_served_version(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    apiext.create_custom_resource_definition(crd())
    custom.create_namespaced_custom_object(
        GROUP,
        "v1",
        "default",
        "widgets",
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}},
    )
    current = apiext.read_custom_resource_definition(f"widgets.{GROUP}")
    beta = client.V1CustomResourceDefinitionVersion(
        name="v1beta1", served=True, storage=False, schema=current.spec.versions[0].schema
    )
    current.spec.versions.append(beta)
    apiext.replace_custom_resource_definition(f"widgets.{GROUP}", current)
    served = custom.get_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", "w")
    assert served["apiVersion"] == f"{GROUP}/v1beta1"
