"""Structural-schema enforcement for custom resources: pruning, defaulting, then validation (422).

What the real server does with a CRD's `openAPIV3Schema`, in the subset structural schemas
use: unknown fields are dropped (and reported, for `fieldValidation`) unless
`x-kubernetes-preserve-unknown-fields` (at any level); nulls are dropped unless `nullable`;
then every absent field with a `default` gets it — at any depth, in every array item and map
value, and inside defaults themselves (a `nullable` field sent as null keeps its null) — and
types, `required`, `enum`, `minimum`/`maximum`, `minLength`/`maxLength`, `pattern` and
`x-kubernetes-int-or-string` are checked. The root's `apiVersion`, `kind` and `metadata` are
the server's business and are left alone. `anyOf`/`allOf`/`oneOf` and CEL rules are not applied.

Must not: touch storage; it maps an object to its pruned copy or raises.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def conform(schema: Mapping[str, Any], obj: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The pruned, defaulted object and the (field path, message) problems found in it."""
    pruned, problems, _unknown = conform_reporting(schema, obj)
    return pruned, problems


def conform_reporting(
    schema: Mapping[str, Any], obj: dict[str, Any]
) -> tuple[dict[str, Any], list[tuple[str, str]], list[str]]:
    """As `conform`, plus the paths of the unknown fields that were pruned."""
    problems: list[tuple[str, str]] = []
    unknown: list[str] = []
    root = {key: obj[key] for key in ROOT_FIELDS if key in obj}
    body = {key: value for key, value in obj.items() if key not in ROOT_FIELDS}
    body_schema = {
        **schema,
        "properties": {k: v for k, v in (schema.get("properties") or {}).items() if k not in ROOT_FIELDS},
    }
    pruned = _walk(body_schema, body, "", problems, unknown)
    return {**root, **(pruned if isinstance(pruned, dict) else {})}, problems, unknown


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_ok(schema: Mapping[str, Any], value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    expected = schema.get("type")
    if expected is None:
        return True
    allowed = _TYPES.get(str(expected), (object,))
    if isinstance(value, bool) and expected != "boolean":
        return False
    return isinstance(value, allowed)


def _walk(
    schema: Mapping[str, Any], value: Any, path: str, problems: list[tuple[str, str]], unknown: list[str]
) -> Any:
    if not _type_ok(schema, value):
        expected = "integer or string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
        problems.append(
            (path, f"Invalid value: {type(value).__name__}: {path} in body must be of type {expected}")
        )
        return value
    if isinstance(value, dict):
        return _walk_object(schema, value, path, problems, unknown)
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [
                _walk(items, item, f"{path}[{index}]", problems, unknown) for index, item in enumerate(value)
            ]
        return value
    _check_scalar(schema, value, path, problems)
    return value


def _walk_object(
    schema: Mapping[str, Any],
    value: dict[str, Any],
    path: str,
    problems: list[tuple[str, str]],
    unknown: list[str],
) -> Any:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or additional is True
    result: dict[str, Any] = {}
    for key, item in value.items():
        child = properties.get(key)
        if child is None and isinstance(additional, Mapping):
            child = additional
        if child is None:
            if keep_unknown:
                result[key] = item
            else:
                unknown.append(_join(path, key))  # pruned, as upstream
            continue
        if item is None and not child.get("nullable"):
            continue  # nulls are dropped for non-nullable fields
        result[key] = item if item is None else _walk(child, item, _join(path, key), problems, unknown)
    for key, child in properties.items():
        if key not in result and isinstance(child, Mapping) and "default" in child:
            result[key] = _walk(child, copy.deepcopy(child["default"]), _join(path, key), problems, unknown)
    for required in schema.get("required") or []:
        if required not in result:
            problems.append((_join(path, str(required)), "Required value"))
    return result


def _check_scalar(schema: Mapping[str, Any], value: Any, path: str, problems: list[tuple[str, str]]) -> None:
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        problems.append(
            (path, f"Unsupported value: {value!r}: supported values: {', '.join(map(repr, enum))}")
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(
                (path, f"Invalid value: {value}: should be greater than or equal to {schema['minimum']}")
            )
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(
                (path, f"Invalid value: {value}: should be less than or equal to {schema['maximum']}")
            )
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(
                (path, f"Invalid value: {value!r}: should be at least {schema['minLength']} chars long")
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append((path, f"Invalid value: {value!r}: may not be longer than {schema['maxLength']}"))
        if "pattern" in schema and re.search(str(schema["pattern"]), value) is None:
            problems.append((path, f"Invalid value: {value!r}: should match '{schema['pattern']}'"))
