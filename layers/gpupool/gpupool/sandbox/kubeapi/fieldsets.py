"""Field sets for server-side apply: which fields an object sets, as `FieldsV1` and as paths.

A field set is the set of leaf paths an object sets. Map keys are `f:<name>`; an item of a
list with keys (`x-kubernetes-list-type: map` + `x-kubernetes-list-map-keys`, or a built-in
kind's patch merge key) is `k:{"key":"value"}` and merges item by item; any other list is
atomic (one leaf). Schemas are walked with `builtin_schemas.resolve`, which also leaves a
CRD's plain schemas as they are. `to_fields_v1` / `from_fields_v1` convert to and from
the nested form stored in `metadata.managedFields`.

Must not: change objects or decide conflicts (see `apply`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpupool.sandbox.kubeapi.builtin_schemas import Schema, resolve

Path = tuple[str, ...]
IGNORED_ROOT = ("apiVersion", "kind", "status")
IGNORED_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)


def child_schema(schema: Schema | None, key: str) -> Schema | None:
    if schema is None:
        return None
    node = resolve(schema)
    properties = node.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        found: Schema = properties[key]
        return found
    additional = node.get("additionalProperties")
    return additional if isinstance(additional, Mapping) else None


def item_schema(schema: Schema | None) -> Schema | None:
    if schema is None:
        return None
    items = resolve(schema).get("items")
    return items if isinstance(items, Mapping) else None


def list_keys(schema: Schema | None) -> list[str]:
    """The keys that identify a list's items, or [] for an atomic list."""
    if schema is None:
        return []
    node = resolve(schema)
    if node.get("x-kubernetes-list-type") == "map" and node.get("x-kubernetes-list-map-keys"):
        return [str(key) for key in node["x-kubernetes-list-map-keys"]]
    merge_key = node.get("x-kubernetes-patch-merge-key")
    return [str(merge_key)] if merge_key else []


def item_key(item: Any, keys: list[str]) -> str | None:
    """The item's `k:{...}` key from the key fields it has (a defaulted one, such as a port's
    `protocol`, may be missing from an applied configuration); None when it has none."""
    present = sorted(key for key in keys if isinstance(item, dict) and key in item)
    if not present:
        return None
    return "k:" + json.dumps({key: item[key] for key in present}, separators=(",", ":"))


def same_item(live: Any, applied: Any, keys: list[str]) -> bool:
    """Whether a live list item is the one an applied item names (by the keys the latter has)."""
    if not isinstance(live, dict) or not isinstance(applied, dict):
        return False
    present = [key for key in keys if key in applied]
    return bool(present) and all(live.get(key) == applied[key] for key in present)


def leaf_paths(obj: Mapping[str, Any], schema: Schema | None) -> set[Path]:
    """Every leaf path `obj` sets (the root's type and status, and server-owned metadata, excluded)."""
    found: set[Path] = set()
    for key, value in obj.items():
        if key in IGNORED_ROOT:
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in IGNORED_METADATA}
            if meta:
                _walk(meta, child_schema(schema, key), ("f:metadata",), found)
            continue
        _walk(value, child_schema(schema, key), (f"f:{key}",), found)
    return found


def _walk(value: Any, schema: Schema | None, path: Path, found: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _walk(item, child_schema(schema, key), (*path, f"f:{key}"), found)
        return
    keys = list_keys(schema)
    if isinstance(value, list) and keys and all(item_key(item, keys) for item in value):
        for item in value:
            item_path = (*path, str(item_key(item, keys)))
            found.add((*item_path, "."))
            for key, field in item.items():
                _walk(field, child_schema(item_schema(schema), key), (*item_path, f"f:{key}"), found)
        return
    found.add(path)


def value_at(obj: Any, path: Path) -> tuple[bool, Any]:
    """(present, value) of a leaf path in an object."""
    current = obj
    for part in path:
        if part == ".":
            return True, None
        if part.startswith("f:") and isinstance(current, dict) and part[2:] in current:
            current = current[part[2:]]
        elif part.startswith("k:") and isinstance(current, list):
            wanted = json.loads(part[2:])
            match = [
                i for i in current if isinstance(i, dict) and all(i.get(k) == v for k, v in wanted.items())
            ]
            if not match:
                return False, None
            current = match[0]
        else:
            return False, None
    return True, current


def remove_path(obj: Any, path: Path) -> None:
    """Remove a leaf (or a keyed list item, for a `.` path) from `obj` in place."""
    if path and path[-1] == ".":
        parent_present, parent = value_at(obj, path[:-2])
        wanted = json.loads(path[-2][2:])
        if parent_present and isinstance(parent, list):
            parent[:] = [
                i
                for i in parent
                if not (isinstance(i, dict) and all(i.get(k) == v for k, v in wanted.items()))
            ]
        return
    present, parent = value_at(obj, path[:-1])
    if present and isinstance(parent, dict) and path[-1].startswith("f:"):
        parent.pop(path[-1][2:], None)


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for part in path:
            node = node.setdefault(part, {})
    return tree


def from_fields_v1(tree: Mapping[str, Any], prefix: Path = ()) -> set[Path]:
    found: set[Path] = set()
    for key, child in tree.items():
        path = (*prefix, key)
        if isinstance(child, Mapping) and child:
            found |= from_fields_v1(child, path)
        else:
            found.add(path)
    return found
