"""Decoding a built-in kind's JSON the way kube-apiserver's Go decoder does.

Walks the object along its OpenAPI definition (`builtin_schemas`): a value of the wrong JSON
type is a decoding error (upstream: 400 "cannot unmarshal … into Go struct field …"); a field
the definition does not have is unknown — dropped, and reported so the caller can answer
`fieldValidation` (Ignore / Warn / Strict); `null` decodes to the zero value, i.e. the field
is dropped; a missing scalar the definition lists as `required` (a Go field without
`omitempty`) comes back as its zero value, as the real server writes it. A `[]byte` field
(`format: byte`) must hold valid base64. The result is a new object; the input is never
changed.

Must not: apply defaults or semantic rules (see `builtin_defaults`, `builtin_rules`).
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from dataclasses import dataclass, field
from typing import Any

from gpupool.sandbox.kubeapi.builtin_schemas import Schema, referenced_name, resolve, types_of

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
_GO_TYPES = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool"}
_JSON_NAMES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "bool"}
DROP = object()
_ZEROS: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}
_BASE64 = frozenset(string.ascii_letters + string.digits + "+/=")
_INDEX = re.compile(r"\[[^\]]*\]")  # list indices and map keys: Go names neither


@dataclass
class Decoded:
    obj: dict[str, Any]
    unknown: list[str] = field(default_factory=list)  # field paths, e.g. spec.containers[0].foo
    type_errors: list[str] = field(default_factory=list)  # Go's decoder messages


def decode(definition: Schema, obj: dict[str, Any], struct: str) -> Decoded:
    """Decode `obj` (a whole object) along `definition`, whose Go struct is named `struct`."""
    result = Decoded({})
    walked = _walk(definition, obj, "", struct, result)
    result.obj = walked if isinstance(walked, dict) else {}
    return result


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _go_type(schema: Schema) -> str:
    name = referenced_name(schema)
    if name is not None:
        return "v1." + name.rsplit(".", 1)[-1]
    types = types_of(schema)
    if not types:
        return "interface {}"
    if types[0] == "array":
        return "[]" + _go_type(schema.get("items") or {})
    if types[0] == "object":
        return "map[string]" + _go_type(schema.get("additionalProperties") or {})
    return _GO_TYPES.get(types[0], types[0])


def _type_ok(schema: Schema, value: Any) -> bool:
    alternatives = schema.get("oneOf")
    if isinstance(alternatives, list):
        return any(_type_ok(choice, value) for choice in alternatives)
    types = types_of(schema)
    if not types:
        return True
    if isinstance(value, bool):
        return "boolean" in types
    return any(isinstance(value, _PYTHON_TYPES.get(t, (object,))) for t in types)


def _walk(declared: Schema, value: Any, path: str, struct: str, result: Decoded) -> Any:
    if value is None:
        return DROP
    schema = resolve(declared)
    if not _type_ok(schema, value):
        json_type = _JSON_NAMES.get(type(value), "value")
        result.type_errors.append(
            f"json: cannot unmarshal {json_type} into Go struct field {struct}.{_INDEX.sub('', path)} "
            f"of type {_go_type(declared)}"
        )
        return DROP
    if isinstance(value, dict) and "object" in types_of(schema):
        return _walk_object(schema, declared, value, path, struct, result)
    if schema.get("format") == "byte" and isinstance(value, str) and (bad := _bad_base64(value)) is not None:
        result.type_errors.append(f"illegal base64 data at input byte {bad}")
        return DROP
    if isinstance(value, list):
        items = schema.get("items") or {}
        walked = [_walk(items, item, f"{path}[{index}]", struct, result) for index, item in enumerate(value)]
        return [item for item in walked if item is not DROP]
    return value


def _walk_object(
    schema: Schema,
    declared: Schema,
    value: dict[str, Any],
    path: str,
    struct: str,
    result: Decoded,
) -> dict[str, Any]:
    properties = schema.get("properties")
    additional = schema.get("additionalProperties")
    name = referenced_name(declared)
    if name is not None and properties is not None:
        struct = name.rsplit(".", 1)[-1]
    decoded: dict[str, Any] = {}
    for key, item in value.items():
        child = properties.get(key) if isinstance(properties, dict) else None
        where = _join(path, key)
        if child is None and isinstance(additional, dict):
            child, where = additional, f"{path}[{key}]"
        if child is None:
            if additional is False or properties is not None:
                result.unknown.append(_join(path, key))
                continue
            decoded[key] = item  # a free-form object (RawExtension, JSON)
            continue
        walked = _walk(child, item, where, struct, result)
        if walked is not DROP:
            decoded[key] = walked
    if isinstance(properties, dict):
        for required in schema.get("required") or []:
            zero = _zero_value(properties.get(required))
            if required not in decoded and zero is not None:
                decoded[required] = zero
    return decoded


def _bad_base64(text: str) -> int | None:
    """Where Go's base64 decoder would stop on `text` (a []byte field), or None when it is valid."""
    for index, char in enumerate(text):
        if char not in _BASE64:
            return index
    if len(text) % 4:
        return len(text) - len(text) % 4
    try:
        base64.b64decode(text, validate=True)
    except binascii.Error:
        return max(len(text) - 4, 0)
    return None


def _zero_value(declared: Schema | None) -> Any:
    """Go's zero value of a scalar field without `omitempty` (a schema's `required`), which the
    real server always writes back: "" / 0 / false. None for anything else."""
    if declared is None:
        return None
    schema = resolve(declared)
    if "oneOf" in schema:
        return None
    types = types_of(schema)
    return _ZEROS.get(types[0]) if types else None
