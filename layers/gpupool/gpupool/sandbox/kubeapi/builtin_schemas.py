"""The Kubernetes 1.30 OpenAPI definitions of built-in kinds, as `kubernetes-validate` ships them.

The package carries each release's definitions as one JSON Schema file (`_definitions.json`,
the "strict" flavour: `additionalProperties: false` wherever upstream's Go structs have fixed
fields). We read that file without importing the package, index the definitions by
group/version/kind, and hand out definitions by name. The server decodes, validates and
publishes (`/openapi/v2`, `/openapi/v3`) built-in kinds from these — no schema is written here.

Must not: validate or change objects (see `decode`); it only loads and looks up schemas.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KUBERNETES_VERSION = "v1.30.0"
REF_PREFIX = "#/$defs/"
Schema = Mapping[str, Any]


def _definitions_file() -> Path:
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the embedded API server needs the kubernetes-validate package for the schemas of "
            "built-in kinds: pip install kubernetes-validate"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "kubernetes-json-schema" / f"{KUBERNETES_VERSION}-local-strict" / "_definitions.json"


@functools.cache
def definitions() -> Mapping[str, Schema]:
    """Definition name (`io.k8s.api.core.v1.Pod`) → its schema."""
    loaded = json.loads(_definitions_file().read_text())
    found: dict[str, Schema] = loaded["$defs"]
    return found


@functools.cache
def _by_kind() -> Mapping[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            index[(str(gvk.get("group", "")), str(gvk["version"]), str(gvk["kind"]))] = name
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition that describes a kind, or None for kinds the release does not define."""
    return _by_kind().get((group, version, kind))


def resolve(schema: Schema) -> Schema:
    """Follow a `$ref` (one level; definitions never chain refs)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        return definitions()[ref[len(REF_PREFIX) :]]
    return schema


def referenced_name(schema: Schema) -> str | None:
    ref = schema.get("$ref")
    return ref[len(REF_PREFIX) :] if isinstance(ref, str) and ref.startswith(REF_PREFIX) else None


def types_of(schema: Schema) -> tuple[str, ...]:
    """The JSON types a schema allows, without `null` (an empty tuple: any value)."""
    declared = schema.get("type")
    if declared is None:
        return ()
    listed = declared if isinstance(declared, list) else [declared]
    return tuple(str(t) for t in listed if t != "null")
