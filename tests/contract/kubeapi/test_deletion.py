"""Deletion semantics: finalizers hold an object with a deletionTimestamp until removed,
ownerReferences cascade (background, orphan, foreground), preconditions, namespaces; what a
completed delete answers (a Success Status, or the object for the registries that return it)."""

from __future__ import annotations

import json

import pytest
from kubeapi_builders import http_call, node, pod
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock


def _owned_by(owner: client.V1Node) -> list[dict[str, object]]:
    return [{"apiVersion": "v1", "kind": "Node", "name": owner.metadata.name, "uid": owner.metadata.uid}]


def _exists(read: object, *args: str) -> bool:
    try:
        read(*args)  # type: ignore[operator]
    except ApiException as error:
        assert error.status == 404
        return False
    return True


def test_finalizer_holds_object_until_removed(core: client.CoreV1Api, clock: ManualClock) -> None:
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c", "finalizers": ["gpupool.dev/hold"]}}
    )
    clock.advance(30)
    _body, code, _headers = core.delete_namespaced_config_map_with_http_info("c", "default")
    assert code == 202
    held = core.read_namespaced_config_map("c", "default")
    assert held.metadata.deletion_timestamp == clock.now()
    core.patch_namespaced_config_map(
        "c", "default", {"metadata": {"finalizers": None}}, _content_type="application/merge-patch+json"
    )
    assert not _exists(core.read_namespaced_config_map, "c", "default")


def test_deleting_object_cannot_gain_finalizers(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "c", "finalizers": ["a.io/x"]}})
    core.delete_namespaced_config_map("c", "default")
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_config_map("c", "default", {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}})
    assert raised.value.status == 422


def test_background_cascade_removes_dependents(core: client.CoreV1Api) -> None:
    owner = core.create_node(node("n1"))
    dependent = pod("p")
    dependent["metadata"]["ownerReferences"] = _owned_by(owner)
    core.create_namespaced_pod("default", dependent)
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c", "ownerReferences": _owned_by(owner)}}
    )
    core.delete_node("n1")
    assert not _exists(core.read_namespaced_pod, "p", "default")
    assert not _exists(core.read_namespaced_config_map, "c", "default")


def test_dependents_wait_for_owner_finalizers(core: client.CoreV1Api) -> None:
    owner = core.create_node({**node("n1"), "metadata": {"name": "n1", "finalizers": ["gpupool.dev/drain"]}})
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c", "ownerReferences": _owned_by(owner)}}
    )
    core.delete_node("n1")
    assert _exists(core.read_namespaced_config_map, "c", "default")
    core.patch_node("n1", [{"op": "remove", "path": "/metadata/finalizers"}])
    assert not _exists(core.read_node, "n1")
    assert not _exists(core.read_namespaced_config_map, "c", "default")


def test_dependent_with_another_live_owner_survives(core: client.CoreV1Api) -> None:
    first, second = core.create_node(node("n1")), core.create_node(node("n2"))
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c", "ownerReferences": _owned_by(first) + _owned_by(second)}}
    )
    core.delete_node("n1")
    survivor = core.read_namespaced_config_map("c", "default")
    assert [ref.name for ref in survivor.metadata.owner_references] == ["n2"]


def test_orphan_propagation_keeps_dependents(core: client.CoreV1Api) -> None:
    owner = core.create_node(node("n1"))
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c", "ownerReferences": _owned_by(owner)}}
    )
    core.delete_node("n1", propagation_policy="Orphan")
    assert not core.read_namespaced_config_map("c", "default").metadata.owner_references


def test_foreground_propagation_removes_dependents(core: client.CoreV1Api) -> None:
    owner = core.create_node(node("n1"))
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c", "ownerReferences": _owned_by(owner)}}
    )
    core.delete_node("n1", body=client.V1DeleteOptions(propagation_policy="Foreground"))
    assert not _exists(core.read_namespaced_config_map, "c", "default")
    assert not _exists(core.read_node, "n1")


def test_delete_precondition_on_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_node(node("n1"))
    core.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
    stale = client.V1DeleteOptions(
        preconditions=client.V1Preconditions(resource_version=created.metadata.resource_version)
    )
    with pytest.raises(ApiException) as raised:
        core.delete_node("n1", body=stale)
    assert raised.value.status == 409
    assert _exists(core.read_node, "n1")


def test_deleting_a_namespace_removes_its_contents(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_pod("team", pod("p"))
    core.create_namespaced_config_map("team", {"metadata": {"name": "c"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "keep"}})
    core.delete_namespace("team")
    assert not _exists(core.read_namespace, "team")
    assert core.list_pod_for_all_namespaces().items == []
    assert [c.metadata.name for c in core.list_config_map_for_all_namespaces().items] == ["keep"]


def test_namespace_waits_for_finalized_contents(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", {"metadata": {"name": "c", "finalizers": ["a.io/x"]}})
    core.delete_namespace("team")
    assert core.read_namespace("team").status.phase == "Terminating"
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map("team", {"metadata": {"name": "late"}})
    assert raised.value.status == 403
    core.patch_namespaced_config_map("c", "team", [{"op": "remove", "path": "/metadata/finalizers"}])
    assert not _exists(core.read_namespace, "team")


def test_delete_collection_by_label(core: client.CoreV1Api) -> None:
    for index in range(3):
        core.create_node(node(f"n{index}", labels={"pool": "a" if index < 2 else "b"}))
    core.delete_collection_node(label_selector="pool=a")
    assert [n.metadata.name for n in core.list_node().items] == ["n2"]


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_system_namespaces_may_not_be_deleted(core: client.CoreV1Api, name: str) -> None:
    with pytest.raises(ApiException) as raised:
        core.delete_namespace(name)
    assert raised.value.status == 403
    assert core.read_namespace(name).status.phase == "Active"


@pytest.mark.parametrize(
    ("refs", "field"),
    [
        ([{"apiVersion": "v1", "kind": "Node", "name": "n1"}], "metadata.ownerReferences[0].uid"),
        ([{"apiVersion": "v1", "kind": "Node", "uid": "u"}], "metadata.ownerReferences[0].name"),
        (
            [
                {"apiVersion": "v1", "kind": "Node", "name": "a", "uid": "1", "controller": True},
                {"apiVersion": "v1", "kind": "Node", "name": "b", "uid": "2", "controller": True},
            ],
            "metadata.ownerReferences",
        ),
    ],
)
def test_malformed_owner_references_are_422(
    custom: client.CustomObjectsApi, refs: list[dict[str, object]], field: str
) -> None:
    # CustomObjectsApi sends dicts as they are (CoreV1Api's models refuse such references client-side).
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "p", "ownerReferences": refs},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                    "requirements": [],
                }
            }
        },
    }
    with pytest.raises(ApiException) as raised:
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
    assert raised.value.status == 422
    assert field in [cause["field"] for cause in json.loads(raised.value.body)["details"]["causes"]]


def test_a_completed_delete_answers_as_its_registry_does(kube_api: EmbeddedKubeAPI) -> None:
    """Upstream: a delete that removes the object answers a Success Status naming it (kind is the
    plural), except for the registries that return the deleted object (pods, namespaces,
    services, …); an object held by finalizers answers itself with 202."""
    port = kube_api.port
    http_call(port, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "gone"}})
    status, body, _ = http_call(port, "DELETE", "/api/v1/namespaces/default/configmaps/gone")
    assert status == 200 and body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "gone" and body["details"]["kind"] == "configmaps"
    assert "group" not in body["details"] and body["details"]["uid"]
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "c"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [{"key": "k", "operator": "Exists"}],
        },
    }
    http_call(port, "POST", "/apis/karpenter.sh/v1/nodeclaims", claim)
    status, body, _ = http_call(port, "DELETE", "/apis/karpenter.sh/v1/nodeclaims/c")
    assert (status, body["details"]["group"], body["details"]["kind"]) == (200, "karpenter.sh", "nodeclaims")
    http_call(port, "POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "sa"}})
    status, body, _ = http_call(port, "DELETE", "/api/v1/namespaces/default/serviceaccounts/sa")
    assert (status, body["kind"]) == (200, "ServiceAccount")
