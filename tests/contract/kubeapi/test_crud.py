"""CRUD semantics through CoreV1Api, CoordinationV1Api and EventsV1Api: server-stamped
metadata, 201/409/404/422 answers with Status bodies, optimistic concurrency, generation."""

from __future__ import annotations

import pytest
from kubeapi_builders import http_call, node, pod, status_body
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock


def test_create_stamps_uid_resource_version_generation_and_clock_time(
    core: client.CoreV1Api, clock: ManualClock
) -> None:
    clock.advance(90)
    created = core.create_namespaced_pod("default", pod("web"))
    assert created.metadata.uid and len(created.metadata.uid) == 36
    assert created.metadata.generation == 1
    assert created.metadata.creation_timestamp == clock.now()
    assert created.status.phase == "Pending"
    fetched = core.read_namespaced_pod("web", "default")
    assert fetched.metadata.resource_version == created.metadata.resource_version


def test_create_answers_201(core: client.CoreV1Api) -> None:
    _body, code, _headers = core.create_namespace_with_http_info({"metadata": {"name": "team-a"}})
    assert code == 201


def test_resource_versions_increase_across_kinds(core: client.CoreV1Api) -> None:
    first = int(core.create_node(node("n1")).metadata.resource_version)
    second = int(
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}}).metadata.resource_version
    )
    third = int(core.create_node(node("n2")).metadata.resource_version)
    assert first < second < third
    assert int(core.list_node().metadata.resource_version) >= third


def test_generate_name_makes_a_unique_name(core: client.CoreV1Api) -> None:
    names = {
        core.create_namespaced_config_map("default", {"metadata": {"generateName": "cfg-"}}).metadata.name
        for _ in range(5)
    }
    assert len(names) == 5
    assert all(name.startswith("cfg-") and len(name) == 9 for name in names)


def test_duplicate_create_is_409_already_exists(core: client.CoreV1Api) -> None:
    core.create_node(node("n1"))
    with pytest.raises(ApiException) as raised:
        core.create_node(node("n1"))
    body = status_body(raised.value)
    assert raised.value.status == 409
    assert (body["kind"], body["apiVersion"], body["status"], body["reason"], body["code"]) == (
        "Status",
        "v1",
        "Failure",
        "AlreadyExists",
        409,
    )
    assert body["details"] == {"name": "n1", "kind": "nodes"}


def test_missing_object_is_404_with_status(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_pod("ghost", "default")
    body = status_body(raised.value)
    assert raised.value.status == 404
    assert body["reason"] == "NotFound" and body["details"]["name"] == "ghost"
    assert body["message"] == 'pods "ghost" not found'


def test_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod("nowhere", pod("p"))
    assert raised.value.status == 404
    assert status_body(raised.value)["details"] == {"name": "nowhere", "kind": "namespaces"}


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ({"metadata": {"name": "p"}, "spec": {"containers": []}}, "spec.containers"),
        ({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "spec.containers[0].image"),
        (pod("Bad_Name"), "metadata.name"),
        (pod("p", labels={"bad key!": "v"}), "metadata.labels"),
        ({"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}}, "metadata.name"),
    ],
)
def test_invalid_objects_are_422_and_not_stored(core: client.CoreV1Api, manifest: dict, field: str) -> None:  # type: ignore[type-arg]
    before = core.list_namespaced_pod("default").metadata.resource_version
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod("default", manifest)
    body = status_body(raised.value)
    assert raised.value.status == 422 and body["reason"] == "Invalid"
    assert field in [cause["field"] for cause in body["details"]["causes"]]
    assert core.list_namespaced_pod("default").metadata.resource_version == before


def test_stale_resource_version_on_replace_is_409_conflict(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    created.data = {"a": "2"}
    core.replace_namespaced_config_map("c", "default", created)
    created.data = {"a": "3"}
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_config_map("c", "default", created)
    assert raised.value.status == 409 and status_body(raised.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("c", "default").data == {"a": "2"}


def test_replace_without_resource_version_is_unconditional(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    replaced = core.replace_namespaced_config_map(
        "c", "default", {"metadata": {"name": "c"}, "data": {"a": "9"}}
    )
    assert replaced.data == {"a": "9"}


def test_replace_keeps_server_owned_metadata(core: client.CoreV1Api) -> None:
    created = core.create_node(node("n1"))
    body = node("n1", labels={"zone": "a"})
    body["metadata"]["uid"] = "forged"
    replaced = core.replace_node("n1", body)
    assert replaced.metadata.uid == created.metadata.uid
    assert replaced.metadata.creation_timestamp == created.metadata.creation_timestamp
    assert replaced.metadata.labels == {"zone": "a"}


def test_generation_moves_with_spec_not_with_metadata_or_status(api_client: client.ApiClient) -> None:
    apps = client.AppsV1Api(api_client)
    template = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    deployment = {
        "metadata": {"name": "w"},
        "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": template},
    }
    assert apps.create_namespaced_deployment("default", deployment).metadata.generation == 1
    labelled = apps.patch_namespaced_deployment("w", "default", {"metadata": {"labels": {"a": "b"}}})
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("w", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    with_status = apps.patch_namespaced_deployment_status("w", "default", {"status": {"replicas": 3}})
    assert with_status.metadata.generation == 2


def test_kinds_whose_registries_keep_no_generation_have_none(core: client.CoreV1Api) -> None:
    """Upstream: Node, Namespace, ConfigMap, Service, … strategies never set metadata.generation."""
    assert core.create_node(node("n1")).metadata.generation is None
    assert core.patch_node("n1", {"spec": {"unschedulable": True}}).metadata.generation is None
    assert core.create_namespace({"metadata": {"name": "ns1"}}).metadata.generation is None


def test_no_op_update_keeps_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    again = core.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    assert again.metadata.resource_version == created.metadata.resource_version


def test_pod_spec_is_immutable_except_images(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "elsewhere"}})
    assert raised.value.status == 422
    updated = core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "main", "image": "b:2"}]}}
    )
    assert updated.spec.containers[0].image == "b:2"


def test_secrets_configmaps_and_core_events(core: client.CoreV1Api) -> None:
    core.create_namespaced_secret("default", {"metadata": {"name": "s"}, "data": {"k": "dmFsdWU="}})
    core.create_namespaced_event(
        "default",
        {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started"},
    )
    assert core.read_namespaced_secret("s", "default").data == {"k": "dmFsdWU="}
    assert [e.reason for e in core.list_namespaced_event("default").items] == ["Started"]
    assert (
        core.list_event_for_all_namespaces(field_selector="involvedObject.name=p").items[0].metadata.name
        == "e1"
    )


def test_events_k8s_io(api_client: client.ApiClient) -> None:
    events = client.EventsV1Api(api_client)
    created = events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "e"},
            "eventTime": "2026-03-01T12:00:00.000000Z",
            "reason": "Scaled",
            "action": "Launch",
            "reportingController": "gpupool",
            "reportingInstance": "x",
            "type": "Normal",
        },
    )
    assert created.reason == "Scaled"
    assert [e.metadata.name for e in events.list_namespaced_event("default").items] == ["e"]


def test_leases_support_optimistic_concurrency(coordination: client.CoordinationV1Api) -> None:
    lease = coordination.create_namespaced_lease(
        "kube-node-lease",
        {"metadata": {"name": "pool-a"}, "spec": {"holderIdentity": "fn-1", "leaseDurationSeconds": 15}},
    )
    stale = lease.metadata.resource_version
    lease.spec.holder_identity = "fn-2"
    won = coordination.replace_namespaced_lease("pool-a", "kube-node-lease", lease)
    assert won.spec.holder_identity == "fn-2"
    lease.metadata.resource_version = stale
    lease.spec.holder_identity = "fn-3"
    with pytest.raises(ApiException) as raised:
        coordination.replace_namespaced_lease("pool-a", "kube-node-lease", lease)
    assert raised.value.status == 409


def test_list_pages_with_limit_and_continue(core: client.CoreV1Api) -> None:
    for index in range(7):
        core.create_node(node(f"n{index}"))
    seen: list[str] = []
    token = None
    while True:
        page = core.list_node(limit=3, _continue=token)
        seen += [item.metadata.name for item in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert sorted(seen) == [f"n{index}" for index in range(7)]


def test_a_put_without_resource_version_is_refused_where_upstream_refuses_it(
    kube_api: EmbeddedKubeAPI,
) -> None:
    """Custom resources, Leases, PDBs, webhooks, … (AllowUnconditionalUpdate false) answer 422
    naming the resource; ConfigMaps and most built-ins overwrite."""
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "c"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [{"key": "k", "operator": "Exists"}],
        },
    }
    http_call(kube_api.port, "POST", "/apis/karpenter.sh/v1/nodeclaims", claim)
    status, body, _ = http_call(kube_api.port, "PUT", "/apis/karpenter.sh/v1/nodeclaims/c", claim)
    assert (status, body["message"]) == (
        422,
        'nodeclaims.karpenter.sh "c" is invalid: '
        "metadata.resourceVersion: Invalid value: 0: must be specified for an update",
    )
    assert (body["details"]["kind"], body["details"]["group"]) == ("nodeclaims", "karpenter.sh")
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
    http_call(kube_api.port, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)
    status, _, _ = http_call(
        kube_api.port, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l", lease
    )
    assert status == 422
    config_map = {"metadata": {"name": "m"}, "data": {"a": "1"}}
    http_call(kube_api.port, "POST", "/api/v1/namespaces/default/configmaps", config_map)
    status, _, _ = http_call(kube_api.port, "PUT", "/api/v1/namespaces/default/configmaps/m", config_map)
    assert status == 200


def test_built_in_list_items_carry_no_kind_custom_ones_do(kube_api: EmbeddedKubeAPI) -> None:
    """Upstream's typed lists leave each item's kind and apiVersion out; unstructured ones keep them."""
    http_call(kube_api.port, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "m"}})
    _, listed, _ = http_call(kube_api.port, "GET", "/api/v1/namespaces/default/configmaps")
    (item,) = listed["items"]
    assert "kind" not in item and "apiVersion" not in item and item["metadata"]["name"] == "m"
    assert "continue" not in listed["metadata"]
    _, pools, _ = http_call(kube_api.port, "GET", "/apis/karpenter.sh/v1/nodepools")
    assert pools["metadata"]["continue"] == ""
