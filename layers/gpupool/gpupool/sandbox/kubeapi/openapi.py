"""`/openapi/v2` and `/openapi/v3`: the served kinds' schemas, so `kubectl explain` works.

Built-in kinds come from `builtin_schemas` (converted back from the JSON Schema flavour
`kubernetes-validate` ships: one type instead of `[type, null]`, OpenAPI `$ref`s, int-or-string
as upstream publishes it); custom resources from their CRD's `openAPIV3Schema`. The v3 index
lists one document per group version; each document carries the schemas of its kinds (and
everything they reference) and a PATCH operation per resource that declares the query
parameters kubectl checks for (`fieldValidation`, `dryRun`, `fieldManager`, `force`).
A protobuf request for v2 gets an empty document (kubectl then skips client-side schemas).

Must not: change state; documents are computed from the registry on each request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from gpupool.sandbox.kubeapi.builtin_schemas import (
    KUBERNETES_VERSION,
    REF_PREFIX,
    definition_name,
    definitions,
)
from gpupool.sandbox.kubeapi.registry import Registry
from gpupool.sandbox.kubeapi.resources import ResourceType

JsonObject = dict[str, Any]
# openapi_v2.Document with only `swagger: "2.0"` (field 1, length-delimited), protobuf-encoded.
EMPTY_OPENAPI_V2 = b"\x0a\x032.0"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_V3_REF = "#/components/schemas/"
_V2_REF = "#/definitions/"
_WRITE_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation", "force")


def _converted(schema: Any, ref_prefix: str) -> Any:
    """A kubernetes-validate schema as OpenAPI publishes it."""
    if isinstance(schema, list):
        return [_converted(item, ref_prefix) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    if isinstance(schema.get("oneOf"), list) and "properties" not in schema:
        kinds = {t for choice in schema["oneOf"] for t in (choice.get("type") or []) if t != "null"}
        if "integer" in kinds:
            return {**_described(schema), "type": "string", "format": "int-or-string"}
        return {**_described(schema), "type": "string"}
    converted: JsonObject = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(REF_PREFIX):
            converted[key] = ref_prefix + value[len(REF_PREFIX) :]
        elif key == "type" and isinstance(value, list):
            real = [t for t in value if t != "null"]
            if real:
                converted[key] = real[0]
        elif key == "additionalProperties" and value is False:
            continue
        elif key == "properties" and isinstance(value, Mapping):
            converted[key] = {name: _converted(prop, ref_prefix) for name, prop in value.items()}
        else:
            converted[key] = _converted(value, ref_prefix)
    return converted


def _described(schema: Mapping[str, Any]) -> JsonObject:
    return {"description": schema["description"]} if "description" in schema else {}


def _closure(roots: list[str]) -> list[str]:
    """The definitions `roots` reference, transitively (upstream's documents are self-contained)."""
    found: list[str] = []
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen or name not in definitions():
            continue
        seen.add(name)
        found.append(name)
        text = json.dumps(definitions()[name])
        for part in text.split('"$ref": "' + REF_PREFIX)[1:]:
            pending.append(part.split('"', 1)[0])
    return sorted(found)


def _custom_schema_name(rt: ResourceType) -> str:
    return ".".join(reversed(rt.group.split("."))) + f".{rt.version}.{rt.kind}"


def _custom_schema(rt: ResourceType, ref_prefix: str) -> JsonObject:
    schema: JsonObject = dict(rt.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    properties = dict(schema.get("properties") or {})
    properties["metadata"] = {"$ref": ref_prefix + OBJECT_META}
    schema["properties"] = properties
    schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "kind": rt.kind, "version": rt.version}]
    return schema


def _schemas(types: list[ResourceType], ref_prefix: str) -> JsonObject:
    builtin = [
        name for rt in types if rt.builtin and (name := definition_name(rt.group, rt.version, rt.kind))
    ]
    custom = [rt for rt in types if not rt.builtin]
    roots = builtin + ([OBJECT_META] if custom else [])
    schemas: JsonObject = {name: _converted(definitions()[name], ref_prefix) for name in _closure(roots)}
    for rt in custom:
        schemas[_custom_schema_name(rt)] = _custom_schema(rt, ref_prefix)
    return schemas


def _patch_path(rt: ResourceType) -> tuple[str, JsonObject]:
    scope = "/namespaces/{namespace}" if rt.namespaced else ""
    path = f"{rt.group_path}{scope}/{rt.plural}/{{name}}"
    operation = {
        "operationId": f"patch{rt.kind}",
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
            for name in _WRITE_PARAMETERS
        ],
        "responses": {"200": {"description": "OK"}},
    }
    return path, {"patch": operation}


def _group_versions(registry: Registry) -> list[tuple[str, str]]:
    return [(group, version) for group, versions in registry.group_versions().items() for version in versions]


def _v3_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _v3_document(registry: Registry, group: str, version: str) -> JsonObject | None:
    types = registry.resources(group, version)
    if not types:
        return None
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": dict(_patch_path(rt) for rt in types),
        "components": {"schemas": _schemas(types, _V3_REF)},
    }


def _hash(registry: Registry, group: str, version: str) -> str:
    names = [
        (rt.kind, rt.plural, json.dumps(rt.schema, sort_keys=True))
        for rt in registry.resources(group, version)
    ]
    return hashlib.sha256(json.dumps(names).encode()).hexdigest()[:32].upper()


def document(path: str, accept: str, registry: Registry) -> JsonObject | bytes | None:
    """The OpenAPI document at `path` (under /openapi/), or None when there is none."""
    if path == "/openapi/v2":
        if "protobuf" in accept:
            return EMPTY_OPENAPI_V2
        all_types = [rt for gv in _group_versions(registry) for rt in registry.resources(*gv)]
        return {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
            "paths": {},
            "definitions": _schemas(all_types, _V2_REF),
        }
    if path == "/openapi/v3":
        paths = {}
        for group, version in _group_versions(registry):
            key = _v3_key(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(registry, group, version)}"}
        return {"paths": paths}
    parts = path.removeprefix("/openapi/v3/").split("/")
    if parts[:1] == ["api"] and len(parts) == 2:
        return _v3_document(registry, "", parts[1])
    if parts[:1] == ["apis"] and len(parts) == 3:
        return _v3_document(registry, parts[1], parts[2])
    return None
