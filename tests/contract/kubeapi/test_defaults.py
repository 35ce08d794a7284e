"""Defaults as kube-apiserver applies them: built-in kinds' common defaults on create, and a
CRD's structural defaults on create and update — nested, in array items and map values, not
over an explicit null of a nullable field, after pruning unknown fields."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from kubeapi_builders import crd, http_call, pod
from kubeapi_kinds import CRON, JOB, PATHS, PDB, ROLE, SERVICE, WEBHOOKS, workload

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

JsonObject = dict[str, Any]
VALID = [
    ("Pod", pod("p")),
    ("Service", SERVICE),
    ("Deployment", workload("Deployment")),
    ("DaemonSet", workload("DaemonSet")),
    ("StatefulSet", workload("StatefulSet", serviceName="w")),
    ("Job", JOB),
    ("CronJob", CRON),
    ("Role", ROLE),
    ("ValidatingWebhookConfiguration", WEBHOOKS),
    ("PodDisruptionBudget", {**PDB, "spec": {"minAvailable": 1}}),
    ("ServiceAccount", {"metadata": {"name": "sa"}}),
]


@pytest.mark.parametrize(("kind", "obj"), VALID, ids=[kind for kind, _ in VALID])
def test_valid_objects_are_accepted_and_read_back(
    kube_api: EmbeddedKubeAPI, kind: str, obj: JsonObject
) -> None:
    status, created, warnings = http_call(kube_api.port, "POST", PATHS[kind] + "?fieldValidation=Strict", obj)
    assert (status, warnings) == (201, []), created
    name = created["metadata"]["name"]
    assert http_call(kube_api.port, "GET", f"{PATHS[kind]}/{name}")[1] == created


def _created(api: EmbeddedKubeAPI, kind: str, obj: JsonObject) -> JsonObject:
    status, created, _ = http_call(api.port, "POST", PATHS[kind], obj)
    assert status == 201, created
    assert isinstance(created, dict)
    return created


def test_pod_defaults(kube_api: EmbeddedKubeAPI) -> None:
    containers = [
        {"name": "a", "image": "busybox"},
        {"name": "b", "image": "repo/tool:1.2", "ports": [{"containerPort": 80}]},
    ]
    spec = _created(kube_api, "Pod", pod("p", containers=containers))["spec"]
    assert {k: spec[k] for k in ("restartPolicy", "dnsPolicy", "schedulerName", "serviceAccountName")} == {
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
    }
    assert spec["terminationGracePeriodSeconds"] == 30
    assert [c["imagePullPolicy"] for c in spec["containers"]] == ["Always", "IfNotPresent"]
    assert spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert spec["containers"][1]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_services_get_distinct_cluster_ips_and_port_defaults(kube_api: EmbeddedKubeAPI) -> None:
    first = _created(kube_api, "Service", SERVICE)["spec"]
    second = _created(kube_api, "Service", {**SERVICE, "metadata": {"name": "t"}})["spec"]
    assert first["type"] == "ClusterIP" and first["clusterIP"].startswith("10.96.")
    assert first["clusterIP"] != second["clusterIP"] and first["clusterIPs"] == [first["clusterIP"]]
    assert first["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]


def test_workload_defaults(kube_api: EmbeddedKubeAPI) -> None:
    deployment = _created(kube_api, "Deployment", workload("Deployment"))["spec"]
    assert deployment["replicas"] == 1 and deployment["revisionHistoryLimit"] == 10
    assert deployment["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert deployment["template"]["spec"]["restartPolicy"] == "Always"
    job = _created(kube_api, "Job", JOB)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["job-name"] == "j"
    assert job["spec"]["backoffLimit"] == 6
    assert _created(kube_api, "CronJob", CRON)["spec"]["concurrencyPolicy"] == "Allow"


def test_secret_string_data_is_merged_into_base64_data(kube_api: EmbeddedKubeAPI) -> None:
    secret = {
        "metadata": {"name": "s"},
        "data": {"a": base64.b64encode(b"1").decode()},
        "stringData": {"b": "two"},
    }
    status, created, _ = http_call(kube_api.port, "POST", "/api/v1/namespaces/default/secrets", secret)
    assert status == 201
    assert created["type"] == "Opaque" and "stringData" not in created
    assert {k: base64.b64decode(v).decode() for k, v in created["data"].items()} == {"a": "1", "b": "two"}


def test_namespaces_get_their_name_label_and_finalizer(kube_api: EmbeddedKubeAPI) -> None:
    created = _created(kube_api, "Namespace", {"metadata": {"name": "team"}})
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert created["spec"] == {"finalizers": ["kubernetes"]}


GADGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "default": {},
            "properties": {
                "operator": {"type": "string", "default": "In"},
                "limits": {
                    "type": "object",
                    "default": {"cpu": "1"},
                    "properties": {"cpu": {"type": "string"}, "burst": {"type": "boolean", "default": False}},
                },
                "rules": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "key": {"type": "string"},
                            "weight": {"type": "integer", "default": 1},
                        },
                    },
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"value": {"type": "string", "default": "x"}},
                    },
                },
                "note": {"type": "string", "nullable": True, "default": "none"},
                "mode": {"type": "string", "default": "auto"},
            },
        }
    },
}


@pytest.fixture
def gadgets(kube_api: EmbeddedKubeAPI) -> str:
    definition = crd(group="example.gpupool.dev", kind="Gadget", plural="gadgets")
    definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = GADGET_SCHEMA
    status, body, _ = http_call(
        kube_api.port, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", definition
    )
    assert status == 201, body
    return "/apis/example.gpupool.dev/v1/namespaces/default/gadgets"


def test_crd_defaults_nested_in_arrays_and_maps(kube_api: EmbeddedKubeAPI, gadgets: str) -> None:
    body = {
        "apiVersion": "example.gpupool.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {
            "rules": [{"key": "a"}, {"key": "b", "weight": 5}],
            "labels": {"x": {}},
            "note": None,
            "mode": None,
            "typo": 1,
        },
    }
    status, created, warnings = http_call(kube_api.port, "POST", gadgets, body)
    assert status == 201, created
    assert created["spec"] == {
        "rules": [{"key": "a", "weight": 1}, {"key": "b", "weight": 5}],
        "labels": {"x": {"value": "x"}},
        "note": None,
        "mode": "auto",
        "operator": "In",
        "limits": {"cpu": "1", "burst": False},
    }
    assert warnings == ['299 - "unknown field \\"spec.typo\\""']


def test_crd_defaults_apply_on_update_and_to_an_empty_object(kube_api: EmbeddedKubeAPI, gadgets: str) -> None:
    status, created, _ = http_call(
        kube_api.port,
        "POST",
        gadgets,
        {"apiVersion": "example.gpupool.dev/v1", "kind": "Gadget", "metadata": {"name": "g"}},
    )
    assert status == 201 and created["spec"]["operator"] == "In"
    created["spec"] = {"operator": "NotIn"}
    status, updated, _ = http_call(kube_api.port, "PUT", f"{gadgets}/g", created)
    assert status == 200
    assert updated["spec"] == {
        "operator": "NotIn",
        "limits": {"cpu": "1", "burst": False},
        "note": "none",
        "mode": "auto",
    }


def test_unknown_custom_fields_are_refused_when_strict(kube_api: EmbeddedKubeAPI, gadgets: str) -> None:
    body = {
        "apiVersion": "example.gpupool.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"typo": 1},
    }
    status, answer, _ = http_call(kube_api.port, "POST", gadgets + "?fieldValidation=Strict", body)
    assert (status, answer["reason"], answer["message"]) == (
        400,
        "BadRequest",
        'Gadget in version "v1" cannot be handled as a Gadget: '
        'strict decoding error: unknown field "spec.typo"',
    )
