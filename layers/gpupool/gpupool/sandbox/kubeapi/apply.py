"""Server-side apply (`application/apply-patch+yaml`) and `metadata.managedFields`.

An apply merges the applied configuration into the live object (maps key by key, keyed
lists item by item, other lists replaced) and makes its field manager the owner of every
field it sets. A field another manager owns with a different value is a conflict — 409
`Conflict` listing each one, as upstream words it — unless `force=true`, which takes the
field over. Fields the same manager applied before and no longer sets are removed, unless
another manager still owns them. Ordinary writes that name a `fieldManager` (kubectl always
does) take ownership of the fields they change, as an `Update` entry.

Must not: store anything or look up schemas; callers pass the schema and write the result.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.builtin_schemas import Schema
from gpupool.sandbox.kubeapi.fieldsets import (
    Path,
    child_schema,
    from_fields_v1,
    item_schema,
    leaf_paths,
    list_keys,
    remove_path,
    same_item,
    to_fields_v1,
    value_at,
)

JsonObject = dict[str, Any]


@dataclass
class Manager:
    manager: str
    operation: str
    api_version: str
    time: str
    paths: set[Path]


def _managers(obj: JsonObject | None) -> list[Manager]:
    entries = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    return [
        Manager(
            str(e.get("manager") or ""),
            str(e.get("operation") or "Update"),
            str(e.get("apiVersion") or ""),
            str(e.get("time") or ""),
            from_fields_v1(e.get("fieldsV1") or {}),
        )
        for e in entries
        if isinstance(e, dict)
    ]


def _store_managers(obj: JsonObject, managers: list[Manager]) -> None:
    entries = [
        {
            "manager": m.manager,
            "operation": m.operation,
            "apiVersion": m.api_version,
            "time": m.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(m.paths),
        }
        for m in managers
        if m.paths
    ]
    meta = obj.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def _own(managers: list[Manager], name: str, operation: str, api_version: str, now: str) -> Manager:
    for entry in managers:
        if entry.manager == name and entry.operation == operation:
            entry.time, entry.api_version = now, api_version
            return entry
    entry = Manager(name, operation, api_version, now, set())
    managers.append(entry)
    return entry


def merge(live: Any, applied: Any, schema: Schema | None) -> Any:
    """The applied configuration merged into the live value."""
    if isinstance(applied, dict) and isinstance(live, dict):
        merged = dict(live)
        for key, value in applied.items():
            merged[key] = merge(live.get(key), value, child_schema(schema, key))
        return merged
    keys = list_keys(schema)
    if isinstance(applied, list) and isinstance(live, list) and keys:
        merged_items = list(live)
        for item in applied:
            index = next((i for i, old in enumerate(merged_items) if same_item(old, item, keys)), None)
            if index is None:
                merged_items.append(copy.deepcopy(item))
            else:
                merged_items[index] = merge(merged_items[index], item, item_schema(schema))
        return merged_items
    return copy.deepcopy(applied)


def _printable(path: Path) -> str:
    return "".join(
        f".{part[2:]}" if part.startswith("f:") else f"[{part[2:]}]" for part in path if part != "."
    )


def _conflict_message(causes: list[JsonObject]) -> str:
    """Upstream's wording: one conflict on one line, several listed per manager."""
    if len(causes) == 1:
        return f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    by_manager: dict[str, list[str]] = {}
    for cause in causes:
        by_manager.setdefault(str(cause["message"]).replace("conflict with", "conflicts with", 1), []).append(
            str(cause["field"])
        )
    listed = "\n".join(
        f"{who}:\n" + "\n".join(f"- {field}" for field in fields) for who, fields in by_manager.items()
    )
    return f"Apply failed with {len(causes)} conflicts: {listed}"


def server_side_apply(
    live: JsonObject | None,
    applied: JsonObject,
    schema: Schema | None,
    *,
    manager: str,
    force: bool,
    now: str,
    kind: str,
    name: str,
) -> JsonObject:
    """The object after `manager` applies `applied` to `live` (None: the object is new)."""
    if not manager:
        raise errors.bad_request("PATCH with apply requires a non-empty fieldManager")
    api_version = str(applied.get("apiVersion") or "")
    applied_paths = leaf_paths(applied, schema)
    managers = _managers(live)
    conflicts: list[tuple[Manager, Path]] = []
    for entry in managers:
        if entry.manager == manager and entry.operation == "Apply":
            continue
        for path in applied_paths & entry.paths:
            if value_at(live, path) != value_at(applied, path):
                conflicts.append((entry, path))
    if conflicts and not force:
        causes = [
            {
                "reason": "FieldManagerConflict",
                "message": f'conflict with "{entry.manager}" using {entry.api_version}',
                "field": _printable(path),
            }
            for entry, path in conflicts
        ]
        raise errors.ApiError(
            409, "Conflict", _conflict_message(causes), details={"name": name, "kind": kind, "causes": causes}
        )
    for entry, path in conflicts:
        entry.paths.discard(path)
    previous = next((m for m in managers if m.manager == manager and m.operation == "Apply"), None)
    unchanged = (
        not conflicts
        and previous is not None
        and previous.paths == applied_paths
        and all(value_at(live, path) == value_at(applied, path) for path in applied_paths)
    )
    own = _own(managers, manager, "Apply", api_version, now)
    if unchanged and previous is not None:
        own.time = previous.time  # a no-op apply writes nothing, not even a new timestamp
    dropped = own.paths - applied_paths
    result: JsonObject = merge(copy.deepcopy(live) if live is not None else {}, applied, schema)
    for path in sorted(dropped, key=len, reverse=True):
        if not any(path in other.paths for other in managers if other is not own):
            remove_path(result, path)
    own.paths = set(applied_paths)
    _store_managers(result, managers)
    return result


def record_update(
    previous: JsonObject | None, updated: JsonObject, schema: Schema | None, *, manager: str, now: str
) -> None:
    """An ordinary write by `manager`: it takes the fields it changed (in place on `updated`)."""
    managers = _managers(previous)
    changed = {
        path
        for path in leaf_paths(updated, schema)
        if previous is None or value_at(previous, path) != value_at(updated, path)
    }
    if not changed:
        _store_managers(updated, managers)
        return
    for entry in managers:
        entry.paths -= changed
    own = _own(managers, manager, "Update", str(updated.get("apiVersion") or ""), now)
    own.paths |= changed
    _store_managers(updated, managers)
