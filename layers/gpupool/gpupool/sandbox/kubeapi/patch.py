"""The three patch formats the official client sends: JSON merge, JSON patch, strategic merge.

* JSON merge patch (RFC 7386): maps merge, `null` deletes, lists are replaced.
* JSON patch (RFC 6902): add, remove, replace, move, copy, test; a failing op is a 422.
* Strategic merge patch, for built-in kinds only (CRDs answer 415 like upstream): lists with a
  merge key in Kubernetes' Go types merge item by item (containers, volumes, env by `name`;
  conditions and node addresses by `type`; ownerReferences by `uid`; finalizers as a set);
  lists without one (tolerations, taints, container statuses) are replaced, as upstream does.
  Given the kind's OpenAPI schema, each list's `x-kubernetes-patch-strategy` / merge key
  decides instead of the table below (so every built-in kind merges as upstream). Directives
  `$patch: replace|delete`, `$deleteFromPrimitiveList/<field>` and `$retainKeys` are honoured;
  `$setElementOrder/<field>` is accepted and ignored.

Must not: validate the result or touch storage; callers re-check the patched object.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from gpupool.sandbox.kubeapi.builtin_schemas import Schema, resolve
from gpupool.sandbox.kubeapi.errors import BUILTIN_PATCH_TYPES, ApiError, bad_request, unsupported_media_type
from gpupool.sandbox.kubeapi.fieldsets import child_schema, item_schema

MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("metadata", "ownerReferences"): "uid",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "ephemeralContainers"): "name",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "containers", "env"): "name",
    ("spec", "initContainers", "env"): "name",
    ("spec", "containers", "ports"): "containerPort",
    ("spec", "containers", "volumeMounts"): "mountPath",
    ("spec", "initContainers", "volumeMounts"): "mountPath",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
}
PRIMITIVE_SETS: frozenset[tuple[str, ...]] = frozenset({("metadata", "finalizers")})


def _invalid_patch(message: str) -> ApiError:
    return ApiError(422, "Invalid", f"the patch could not be applied: {message}")


def merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f"JSON pointer {path!r} must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(document: Any, parts: list[str]) -> Any:
    current = document
    for part in parts[:-1]:
        current = _child(current, part)
    return current


def _child(container: Any, part: str) -> Any:
    if isinstance(container, dict):
        if part not in container:
            raise _invalid_patch(f"path element {part!r} does not exist")
        return container[part]
    if isinstance(container, list):
        index = _index(container, part, allow_end=False)
        return container[index]
    raise _invalid_patch(f"cannot descend into {part!r}")


def _index(container: list[Any], part: str, *, allow_end: bool) -> int:
    if part == "-" and allow_end:
        return len(container)
    if not part.isdigit():
        raise _invalid_patch(f"list index {part!r} is not a number")
    index = int(part)
    if index > len(container) or (index == len(container) and not allow_end):
        raise _invalid_patch(f"list index {index} is out of range")
    return index


def _add(document: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _parent(document, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise _invalid_patch(f"cannot add at {'/'.join(parts)}")
    return document


def _remove(document: Any, parts: list[str]) -> Any:
    if not parts:
        raise _invalid_patch("cannot remove the whole document")
    parent = _parent(document, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch(f"cannot remove missing field {last!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, allow_end=False))
    raise _invalid_patch(f"cannot remove at {'/'.join(parts)}")


def json_patch(original: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch applied to a deep copy of `original`."""
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be a list of operations")
    document = copy.deepcopy(original)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise _invalid_patch(f"malformed operation {operation!r}")
        op, parts = operation["op"], _pointer(str(operation["path"]))
        if op in ("add", "replace", "test") and "value" not in operation:
            raise _invalid_patch(f"operation {op!r} needs a value")
        if op == "add":
            document = _add(document, parts, copy.deepcopy(operation["value"]))
        elif op == "remove":
            _remove(document, parts)
        elif op == "replace":
            if parts:
                _remove(document, parts)
            document = _add(document, parts, copy.deepcopy(operation["value"]))
        elif op in ("move", "copy"):
            source = _pointer(str(operation.get("from", "")))
            value = _remove(document, source) if op == "move" else copy.deepcopy(_resolve(document, source))
            document = _add(document, parts, value)
        elif op == "test":
            if _resolve(document, parts) != operation["value"]:
                raise _invalid_patch(f"test operation failed at {operation['path']!r}")
        else:
            raise _invalid_patch(f"unknown operation {op!r}")
    return document


def _resolve(document: Any, parts: list[str]) -> Any:
    current = document
    for part in parts:
        current = _child(current, part)
    return current


def strategic_merge_patch(
    original: dict[str, Any], patch: Any, schema: Schema | None = None
) -> dict[str, Any]:
    """Strategic merge patch for built-in kinds (see the module docstring for the list rules).
    With the kind's OpenAPI `schema`, every list follows its `x-kubernetes-patch-strategy` and
    `x-kubernetes-patch-merge-key` (webhooks by name, finalizers as a set, ...)."""
    if not isinstance(patch, dict):
        raise bad_request("a strategic merge patch must be a JSON object")
    merged = _merge_map(original, patch, (), schema)
    return merged if isinstance(merged, dict) else {}


def _list_strategy(path: tuple[str, ...], schema: Schema | None) -> tuple[bool, str | None]:
    """(merge?, merge key) for the list at `path`: from the schema, else the built-in table."""
    if schema is not None:
        node = resolve(schema)
        merging = "merge" in str(node.get("x-kubernetes-patch-strategy") or "")
        key = node.get("x-kubernetes-patch-merge-key")
        return merging, str(key) if merging and key else None
    if path in PRIMITIVE_SETS:
        return True, None
    key = MERGE_KEYS.get(path)
    return key is not None, key


def _merge_map(original: Any, patch: dict[str, Any], path: tuple[str, ...], schema: Schema | None) -> Any:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(original) if isinstance(original, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            doomed = value if isinstance(value, list) else []
            result[field] = [item for item in result.get(field) or [] if item not in doomed]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(result.get(key), value, (*path, key), child_schema(schema, key))
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, (*path, key), child_schema(schema, key))
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(original: Any, patch: list[Any], path: tuple[str, ...], schema: Schema | None) -> list[Any]:
    current = list(original) if isinstance(original, list) else []
    merging, merge_key = _list_strategy(path, schema)
    if merging and merge_key is None:
        return current + [item for item in patch if item not in current]
    if merge_key is None:
        return [copy.deepcopy(item) for item in patch if not (isinstance(item, dict) and "$patch" in item)]
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"items of {'.'.join(path)} must be objects with {merge_key!r}")
        if item.get("$patch") == "replace" and set(item) == {"$patch"}:
            current = []
            continue
        key_value = item.get(merge_key)
        position = next(
            (
                i
                for i, existing in enumerate(current)
                if isinstance(existing, dict) and existing.get(merge_key) == key_value
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                current.pop(position)
            continue
        if position is None:
            current.append({k: copy.deepcopy(v) for k, v in item.items() if k != "$patch"})
        else:
            current[position] = _merge_map(current[position], item, path, item_schema(schema))
    return current


STRATEGIC = "application/strategic-merge-patch+json"
Patcher = Callable[[dict[str, Any]], dict[str, Any]]


def patcher(content_type: str, patch: Any, schema: Schema | None) -> Patcher:
    """The function a PATCH request's body applies to the stored object, by Content-Type
    (415 for a type the server does not speak)."""
    if content_type == "application/json-patch+json":
        return lambda current: _as_object(json_patch(current, patch))
    if content_type == "application/merge-patch+json":
        if not isinstance(patch, dict):
            raise bad_request("a merge patch must be a JSON object")
        return lambda current: _as_object(merge_patch(current, patch))
    if content_type == STRATEGIC:
        return lambda current: strategic_merge_patch(current, patch, schema)
    raise unsupported_media_type(BUILTIN_PATCH_TYPES)


def _as_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ApiError(422, "Invalid", "the patched object is not a JSON object")
    return value
