"""Structural-schema enforcement for custom resources: pruning, defaulting, then validation (422).

What the real server does with a CRD's `openAPIV3Schema`, in the subset structural schemas
use: unknown fields are dropped (and reported, for `fieldValidation`) unless
`x-kubernetes-preserve-unknown-fields` (at any level); nulls are dropped unless `nullable`;
then every absent field with a `default` gets it — at any depth, in every array item and map
value, and inside defaults themselves (a `nullable` field sent as null keeps its null) — and
types, `required`, `enum`, `minimum`/`maximum`, `minLength`/`maxLength`, `pattern`,
`minItems`/`maxItems`, `minProperties`/`maxProperties`, `x-kubernetes-int-or-string` and the
uniqueness of `x-kubernetes-list-type: map` / `set` lists are checked. String checks apply to
strings only, as kube-openapi's validator does (a `pattern` written beside an array's `items`
constrains nothing); a `pattern` is read as Go's regexp reads it (`core.goregexp`: `$` is the
end of the text); `date-time` and `date` formats as `string_formats` reads them. The CEL rules
(`x-kubernetes-validations`) of every node that has a value are evaluated by `cel` on the
pruned, defaulted value; on an update the old object is walked alongside (by property, map key
and list-map key, as upstream correlates them), so transition rules (`oldSelf`) compare like
with like and are skipped where there is nothing to compare. As upstream
(apiextensions-apiserver `registry/customresource/strategy.go`), the causes come in order —
schema, then list uniqueness, then CEL — and a blocking schema error (a wrong type or format,
a required field, an enum, `maxLength`, `maxItems`, `maxProperties`) replaces every CEL cause
with the one note `BLOCKED_RULES`. The root's `apiVersion`, `kind` and `metadata` are the
server's business and are left alone. `anyOf`/`allOf`/`oneOf` are not applied.

Must not: touch storage; it maps an object to its pruned copy or raises.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupool.core.goregexp import go_match
from gpupool.sandbox.kubeapi.cel import evaluate
from gpupool.sandbox.kubeapi.errors import TypeInvalid, go_quote
from gpupool.sandbox.kubeapi.string_formats import format_problem

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
ROOT_FIELDS = ("apiVersion", "kind", "metadata")
_ABSENT: Any = object()  # no old value at this path (a create, or nothing to correlate with)
# The cause upstream appends, instead of any CEL verdict, when a blocking error stops CEL: a
# field.Invalid with no path and no value, which Go prints as `<nil>` and `null`.
BLOCKED_RULES = (
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation",
)
# Cause prefixes of the error types upstream's hasBlockingErr stops CEL for (TypeInvalid, which
# also prints "Invalid value", is recorded by `_Walk.block`).
_BLOCKING_PREFIXES = ("Required value", "Unsupported value", "Too long", "Too many")


@dataclass
class _Walk:
    problems: list[tuple[str, str]] = field(default_factory=list)
    listed: list[tuple[str, str]] = field(default_factory=list)  # list-map / set uniqueness
    rules: list[tuple[str, str]] = field(default_factory=list)  # CEL verdicts
    unknown: list[str] = field(default_factory=list)
    blocked: bool = False
    # A status write validates the status schema on its own (upstream's statusSchemaValidator):
    # the messages name paths from inside it ("conditions[0].type"), the causes' fields do not.
    message_root: str = ""

    def named(self, path: str) -> str:
        """`path` as kube-openapi's messages name it."""
        if not self.message_root:
            return path
        return path.removeprefix(self.message_root).removeprefix(".")

    def block(self, path: str, message: str) -> None:
        """A TypeInvalid cause (a wrong type or format): it stops CEL, as upstream."""
        self.problems.append((path, TypeInvalid(message)))
        self.blocked = True

    def causes(self, schema: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Schema causes, then list causes, then the CEL verdicts — or, when a blocking error
        stopped CEL in a schema that has rules, the note in their place."""
        blocked = self.blocked or any(m.startswith(_BLOCKING_PREFIXES) for _, m in self.problems)
        if not blocked:
            return [*self.problems, *self.listed, *self.rules]
        return [*self.problems, *self.listed, *([BLOCKED_RULES] if _has_rules(schema) else [])]


def _has_rules(schema: Any) -> bool:
    """Whether any node of `schema` carries `x-kubernetes-validations` (upstream builds a CEL
    validator, and notes what it skipped, only then)."""
    if isinstance(schema, list):
        return any(_has_rules(item) for item in schema)
    if not isinstance(schema, Mapping):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    children = [*(schema.get("properties") or {}).values()]
    children += [
        schema.get(key) for key in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not")
    ]
    return any(_has_rules(child) for child in children)


def conform(schema: Mapping[str, Any], obj: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The pruned, defaulted object and the (field path, message) problems found in it."""
    pruned, problems, _unknown = conform_reporting(schema, obj)
    return pruned, problems


def conform_reporting(
    schema: Mapping[str, Any],
    obj: dict[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    status_write: bool = False,
) -> tuple[dict[str, Any], list[tuple[str, str]], list[str]]:
    """As `conform`, plus the paths of the unknown fields that were pruned; `old` is the stored
    object an update replaces (its transition rules compare against it); `status_write` for a
    write through the status subresource (messages name paths from inside `status`)."""
    walk = _Walk(message_root="status" if status_write else "")
    root = {key: obj[key] for key in ROOT_FIELDS if key in obj}
    body = {key: value for key, value in obj.items() if key not in ROOT_FIELDS}
    old_body = (
        {key: value for key, value in old.items() if key not in ROOT_FIELDS} if old is not None else _ABSENT
    )
    body_schema = {
        **schema,
        "properties": {k: v for k, v in (schema.get("properties") or {}).items() if k not in ROOT_FIELDS},
    }
    pruned = _walk(body_schema, body, old_body, "", walk)
    return {**root, **(pruned if isinstance(pruned, dict) else {})}, walk.causes(schema), walk.unknown


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


def _walk(schema: Mapping[str, Any], value: Any, old: Any, path: str, walk: _Walk) -> Any:
    if not _type_ok(schema, value):
        walk.block(path, _type_problem(schema, value, walk.named(path)))
        _any_of_problems(schema, value, path, walk)
        return value
    if isinstance(value, dict):
        result: Any = _walk_object(schema, value, old, path, walk)
    elif isinstance(value, list):
        result = _walk_array(schema, value, old, path, walk)
    else:
        _check_scalar(schema, value, path, walk)
        result = value
    for rule in schema.get("x-kubernetes-validations") or []:
        problem = evaluate(rule, result, None if old is _ABSENT else old, has_old=old is not _ABSENT)
        if problem is not None:
            walk.rules.append((path, problem))
    return result


def _json_type(value: Any) -> str:
    """The JSON type kube-openapi names for a decoded value (its `schemaInfoForType`)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _go_format(value: Any) -> str:
    """The format kube-openapi infers for a decoded value: JSON numbers decode to int64 or float64."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return "int64"
    return "float64" if isinstance(value, float) else ""


def _type_problem(schema: Mapping[str, Any], value: Any, path: str, expected: str | None = None) -> str:
    """Upstream's TypeInvalid cause: `Invalid value: "<got>": <path> in body must be of type
    <expected>: "<got>"` (an int-or-string is of type `integer,string`). A schema with a format
    names the format, and the value's inferred format, when a value that is neither a string nor
    a list breaks it (kube-openapi's order)."""
    if expected is None:
        expected = "integer,string" if schema.get("x-kubernetes-int-or-string") else str(schema.get("type"))
    got = _json_type(value)
    if schema.get("format") and not isinstance(value, (str, list)):
        expected, got = str(schema["format"]), _go_format(value)
    shown = go_quote(got)
    return f"Invalid value: {shown}: {path} in body must be of type {expected}: {shown}"


def _any_of_problems(schema: Mapping[str, Any], value: Any, path: str, walk: _Walk) -> None:
    """An `anyOf` none of whose branches takes the value (int-or-string quantities, the only
    anyOf a structural schema may carry): kube-openapi's composite error, which the server files
    under the validated root (`<nil>`, or `status` on a status write) naming the path, then the
    first branch's own failure."""
    branches = [b for b in schema.get("anyOf") or [] if isinstance(b, Mapping)]
    if not branches or any(_type_ok(branch, value) for branch in branches):
        return
    named = walk.named(path)
    walk.problems.append(
        (
            walk.message_root or "<nil>",
            f'Invalid value: "": {go_quote(named)} must validate at least one schema (anyOf)',
        )
    )
    first = branches[0]
    walk.block(path, _type_problem(first, value, named, expected=str(first.get("type"))))


def _walk_array(schema: Mapping[str, Any], value: list[Any], old: Any, path: str, walk: _Walk) -> Any:
    items = schema.get("items")
    result = value
    if isinstance(items, Mapping):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        listed_map = schema.get("x-kubernetes-list-type") == "map" and keys
        result = [
            _walk(
                items,
                item,
                _old_item(item, old, keys) if listed_map else _ABSENT,
                f"{path}[{index}]",
                walk,
            )
            for index, item in enumerate(value)
        ]
    if "maxItems" in schema and len(result) > schema["maxItems"]:
        walk.problems.append((path, f"Too many: {len(result)}: must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(result) < schema["minItems"]:
        walk.problems.append(
            (
                path,
                f"Invalid value: {len(result)}: {walk.named(path)} in body should have at least "
                f"{schema['minItems']} items",
            )
        )
    _check_unique(schema, result, path, walk.listed)
    return result


def _old_item(item: Any, old: Any, keys: list[str]) -> Any:
    """The old list-map entry with the same keys as `item` (upstream's correlation), or absent."""
    if not isinstance(old, list) or not isinstance(item, dict):
        return _ABSENT
    wanted = [item.get(k) for k in keys]
    return next(
        (o for o in old if isinstance(o, dict) and [o.get(k) for k in keys] == wanted),
        _ABSENT,
    )


def _check_unique(
    schema: Mapping[str, Any], items: list[Any], path: str, problems: list[tuple[str, str]]
) -> None:
    kind = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if kind not in ("map", "set"):
        return
    seen: set[str] = set()
    for index, item in enumerate(items):
        identity = (
            json.dumps([item.get(k) for k in keys], sort_keys=True)
            if kind == "map" and isinstance(item, dict)
            else json.dumps(item, sort_keys=True)
        )
        if identity in seen:
            shown = {k: item.get(k) for k in keys} if kind == "map" and isinstance(item, dict) else item
            problems.append((f"{path}[{index}]", f"Duplicate value: {json.dumps(shown, sort_keys=True)}"))
        seen.add(identity)


def _walk_object(schema: Mapping[str, Any], value: dict[str, Any], old: Any, path: str, walk: _Walk) -> Any:
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
                walk.unknown.append(_join(path, key))  # pruned, as upstream
            continue
        if item is None and not child.get("nullable"):
            continue  # nulls are dropped for non-nullable fields
        old_item = old.get(key, _ABSENT) if isinstance(old, dict) else _ABSENT
        result[key] = item if item is None else _walk(child, item, old_item, _join(path, key), walk)
    for key, child in properties.items():
        if key not in result and isinstance(child, Mapping) and "default" in child:
            old_item = old.get(key, _ABSENT) if isinstance(old, dict) else _ABSENT
            result[key] = _walk(child, copy.deepcopy(child["default"]), old_item, _join(path, key), walk)
    for required in schema.get("required") or []:
        if required not in result:
            walk.problems.append((_join(path, str(required)), "Required value"))
    if "maxProperties" in schema and len(result) > schema["maxProperties"]:
        walk.problems.append(
            (path, f"Too many: {len(result)}: must have at most {schema['maxProperties']} items")
        )
    if "minProperties" in schema and len(result) < schema["minProperties"]:
        walk.problems.append(
            (
                path,
                f"Invalid value: {len(result)}: {walk.named(path)} in body should have at least "
                f"{schema['minProperties']} properties",
            )
        )
    return result


def _check_scalar(schema: Mapping[str, Any], value: Any, path: str, walk: _Walk) -> None:
    problems = walk.problems
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(f'"{v}"' for v in enum)
        problems.append((path, f'Unsupported value: "{value}": supported values: {supported}'))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(
                (
                    path,
                    f"Invalid value: {value}: {walk.named(path)} in body should be greater than or equal to "
                    f"{schema['minimum']}",
                )
            )
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(
                (
                    path,
                    f"Invalid value: {value}: {walk.named(path)} in body should be less than or equal to "
                    f"{schema['maximum']}",
                )
            )
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(
                (
                    path,
                    f'Invalid value: "{value}": {walk.named(path)} in body should be at least '
                    f"{schema['minLength']} chars long",
                )
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append((path, f"Too long: may not be more than {schema['maxLength']} bytes"))
        if "pattern" in schema and not go_match(str(schema["pattern"]), value):
            problems.append(
                (
                    path,
                    f"Invalid value: {go_quote(value)}: {walk.named(path)} in body should match "
                    f"'{schema['pattern']}'",
                )
            )
        if (problem := format_problem(schema, value, walk.named(path))) is not None:
            walk.block(path, problem)
