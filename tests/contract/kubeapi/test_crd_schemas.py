"""CRD schemas enforced on custom resources, as the real server does for structural
schemas: unknown fields pruned (unless preserved), nulls dropped, types, required fields,
enums, bounds and patterns checked with 422 naming the field; gpupool's generated schemas
included; `enforce_schemas=False` turns it off."""

from __future__ import annotations

from typing import Any

import pytest
from kubeapi_builders import crd, status_body
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

GROUP = "example.gpupool.dev"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "amount": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"id": {"type": "integer"}}},
                },
                "note": {"type": "string", "nullable": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def _install(apiext: client.ApiextensionsV1Api) -> None:
    manifest = crd()
    manifest["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": SCHEMA}
    apiext.create_custom_resource_definition(manifest)


def _widget(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def _create(custom: client.CustomObjectsApi, spec: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = custom.create_namespaced_custom_object(
        GROUP, "v1", "default", "widgets", _widget(spec)
    )
    return created


def test_unknown_fields_are_pruned_and_preserved_ones_kept(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    _install(apiext)
    created = _create(
        custom,
        {
            "size": 2,
            "typo": 1,
            "free": {"anything": {"goes": True}},
            "items": [{"id": 1, "extra": "x"}],
            "labels": {"a": "b"},
            "note": None,
            "mode": None,
        },
    )
    assert created["spec"] == {
        "size": 2,
        "free": {"anything": {"goes": True}},
        "items": [{"id": 1}],
        "labels": {"a": "b"},
        "note": None,
    }


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.size"),
        ({"size": "two"}, "spec.size"),
        ({"size": True}, "spec.size"),
        ({"size": 0}, "spec.size"),
        ({"size": 11}, "spec.size"),
        ({"size": 1, "mode": "Medium"}, "spec.mode"),
        ({"size": 1, "name": "UPPER"}, "spec.name"),
        ({"size": 1, "name": "toolongname"}, "spec.name"),
        ({"size": 1, "amount": 1.5}, "spec.amount"),
        ({"size": 1, "labels": {"a": 1}}, "spec.labels.a"),
        ({"size": 1, "items": [{"id": "x"}]}, "spec.items[0].id"),
    ],
)
def test_schema_violations_are_422_naming_the_field(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi, spec: dict[str, Any], field: str
) -> None:
    _install(apiext)
    with pytest.raises(ApiException) as raised:
        _create(custom, spec)
    assert raised.value.status == 422
    assert field in [cause["field"] for cause in status_body(raised.value)["details"]["causes"]]


def test_status_is_checked_through_the_status_subresource(
    apiext: client.ApiextensionsV1Api, custom: client.CustomObjectsApi
) -> None:
    _install(apiext)
    _create(custom, {"size": 1})
    with pytest.raises(ApiException) as raised:
        custom.patch_namespaced_custom_object_status(
            GROUP, "v1", "default", "widgets", "w", {"status": {"ready": "yes"}}
        )
    assert raised.value.status == 422
    ok = custom.patch_namespaced_custom_object_status(
        GROUP, "v1", "default", "widgets", "w", {"status": {"ready": True, "x": 1}}
    )
    assert ok["status"] == {"ready": True}


def test_gpupool_schema_rejects_a_bad_quantity(custom: client.CustomObjectsApi) -> None:
    pool = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": "p"},
        "spec": {"capacityConfig": {"maxResources": {"tflops": "lots"}}},
    }
    with pytest.raises(ApiException) as raised:
        custom.create_cluster_custom_object("tensor-fusion.ai", "v1", "gpupools", pool)
    assert raised.value.status == 422
    assert "spec.capacityConfig.maxResources.tflops" in [
        c["field"] for c in status_body(raised.value)["details"]["causes"]
    ]


def test_enforcement_can_be_turned_off() -> None:
    with EmbeddedKubeAPI(enforce_schemas=False) as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        _install(client.ApiextensionsV1Api(api_client))
        created = _create(client.CustomObjectsApi(api_client), {"size": "not checked", "typo": 1})
        assert created["spec"] == {"size": "not checked", "typo": 1}
