"""Builders for the contract suite: manifests as plain dicts, with overrides."""

from __future__ import annotations

import http.client
import json
from typing import Any

from kubernetes.client.exceptions import ApiException

JsonObject = dict[str, Any]


def pod(
    name: str, *, labels: dict[str, str] | None = None, node: str | None = None, **spec: Any
) -> JsonObject:
    body: JsonObject = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }
    if node is not None:
        body["spec"]["nodeName"] = node
    return body


def node(name: str, *, labels: dict[str, str] | None = None) -> JsonObject:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


def crd(
    *,
    group: str = "example.gpupool.dev",
    kind: str = "Widget",
    plural: str = "widgets",
    scope: str = "Namespaced",
    status: bool = True,
) -> JsonObject:
    version: JsonObject = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": scope,
            "versions": [version],
        },
    }


def status_body(error: ApiException) -> JsonObject:
    """The `meta/v1 Status` the server sent with an error."""
    body = json.loads(error.body)
    assert isinstance(body, dict)
    return body


def http_call(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> tuple[int, Any, list[str]]:
    """One raw HTTP request: (status, decoded JSON body, Warning headers)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = (body if isinstance(body, bytes) else json.dumps(body).encode()) if body is not None else None
    connection.request(method, path, body=data, headers={"Content-Type": content_type, "Accept": accept})
    response = connection.getresponse()
    raw = response.read()
    warnings = response.headers.get_all("Warning") or []
    connection.close()
    return response.status, json.loads(raw) if raw else None, warnings
