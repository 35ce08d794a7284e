"""Server-side printing for kubectl: `meta.k8s.io/v1 Table` answers when the client asks.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`; the real server
then prints columns itself: a built-in kind's upstream columns (`printers`), or for a custom
resource Name, its CRD's `additionalPrinterColumns`, and Age. A custom column's cell follows
apiextensions-apiserver's table convertor: null when the path finds nothing, the value as text in
a `string` column, a JSON integer / number / boolean in a column of that type (null when the
value is not one), and a `date` column's timestamp as an age. Each row carries the object's
metadata (`PartialObjectMetadata`), as upstream's default `includeObject=Metadata`.

Must not: change state.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.printers import Cell, age, columns_for
from gpupool.sandbox.kubeapi.resources import ResourceType

JsonObject = dict[str, Any]
_NUMBERS = {"Restarts", "Data", "Secrets", "Webhooks", "Active"}


def wants_table(accept: str) -> bool:
    return "as=Table" in accept and "g=meta.k8s.io" in accept


_MISSING = object()


def _raw(obj: JsonObject, path: str) -> Any:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return _MISSING
        current = current[part]
    return current


def _text(value: Any) -> str:
    """A value as a `string` column prints it (Go's `%v` of the decoded JSON value)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format(value, "g") if isinstance(value, float) else str(value)
    return json.dumps(value, separators=(",", ":"))


def _custom_cell(value: Any, kind: str, now: datetime) -> Any:
    if value is _MISSING or value is None:
        return None
    if kind == "string":
        return _text(value)
    if kind == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        return age(value, now) if isinstance(value, str) else None
    return _text(value)


def _custom_columns(rt: ResourceType) -> list[tuple[str, str, int, Cell]]:
    extra = [
        (name, kind, path.lstrip(".")) for name, kind, path in rt.printer_columns if path.startswith(".")
    ]
    columns: list[tuple[str, str, int, Cell]] = [
        ("Name", "string", 0, lambda obj, _now: metadata(obj).get("name"))
    ]
    for name, kind, path in extra:

        def cell(obj: JsonObject, now: datetime, path: str = path, kind: str = kind) -> Any:
            return _custom_cell(_raw(obj, path), kind, now)

        columns.append((name, kind, 0, cell))
    if not any(name == "Age" for name, _kind, _path in extra):
        columns.append(("Age", "date", 0, lambda obj, now: age(metadata(obj).get("creationTimestamp"), now)))
    return columns


def _columns(rt: ResourceType) -> list[tuple[str, str, int, Cell]]:
    if not rt.builtin:
        return _custom_columns(rt)
    return [
        (name, "integer" if name in _NUMBERS else "string", priority, cell)
        for name, priority, cell in columns_for(rt.group, rt.kind)
    ]


def table(
    objects: list[JsonObject],
    *,
    rt: ResourceType,
    resource_version: str,
    now: datetime,
    with_definitions: bool = True,
) -> JsonObject:
    columns = _columns(rt)
    rows = [
        {
            "cells": [cell(obj, now) for _name, _kind, _priority, cell in columns],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": metadata(obj),
            },
        }
        for obj in objects
    ]
    definitions = [
        {
            "name": name,
            "type": kind if kind in ("integer", "number", "boolean", "date") else "string",
            "format": "name" if name == "Name" else "",
            "description": name,
            "priority": priority,
        }
        for name, kind, priority, _cell in columns
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions if with_definitions else [],
        "rows": rows,
    }
