"""Status subresource: the main endpoint ignores status changes, /status changes only
status, for built-in kinds (pods, nodes) and custom resources alike."""

from __future__ import annotations

from kubeapi_builders import crd, node, pod
from kubernetes import client

GROUP, VERSION, PLURAL = "example.gpupool.dev", "v1", "widgets"


def _widget(name: str, **fields: object) -> dict[str, object]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "metadata": {"name": name}, **fields}


def test_main_endpoint_ignores_status_for_pods(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("p"))
    patched = core.patch_namespaced_pod(
        "p", "default", {"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Running"}}
    )
    assert patched.status.phase == "Pending"
    assert patched.metadata.labels == {"x": "y"}


def test_status_endpoint_changes_only_status(core: client.CoreV1Api) -> None:
    core.create_node(node("n1"))
    body = core.read_node("n1")
    body.metadata.labels = {"ignored": "yes"}
    body.status = client.V1NodeStatus(phase="Running", capacity={"nvidia.com/gpu": "8"})
    replaced = core.replace_node_status("n1", body)
    assert replaced.status.capacity == {"nvidia.com/gpu": "8"}
    assert not replaced.metadata.labels


def test_custom_resource_status_subresource(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    apiext.create_custom_resource_definition(crd())
    created = custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _widget("w", spec={"size": 1}, status={"ready": True})
    )
    assert "status" not in created  # dropped on create, as upstream
    with_status = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "w", {"status": {"ready": True}, "spec": {"size": 99}}
    )
    assert with_status["status"] == {"ready": True}
    assert with_status["spec"] == {"size": 1}
    assert with_status["metadata"]["generation"] == 1
    replaced = custom.replace_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w",
        {**with_status, "spec": {"size": 2}, "status": {"ready": False}},
    )
    assert replaced["spec"] == {"size": 2} and replaced["status"] == {"ready": True}
    assert replaced["metadata"]["generation"] == 2


def test_without_status_subresource_status_is_ordinary_data(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    apiext.create_custom_resource_definition(crd(status=False))
    created = custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _widget("w", status={"ready": True})
    )
    assert created["status"] == {"ready": True}
