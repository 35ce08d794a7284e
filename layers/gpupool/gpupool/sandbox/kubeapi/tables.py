"""Server-side printing for kubectl: `meta.k8s.io/v1 Table` answers when the client asks.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`; the real server then
prints columns itself: a built-in kind's upstream columns (`printers`), or for a custom resource
Name and its CRD version's `additionalPrinterColumns` (Age alone when it has none), each described
as upstream describes it (Name by ObjectMeta's documentation, a column by its own description or
its path). A custom column's cell follows apiextensions-apiserver's table convertor: its path read
by `jsonpath`, only the first value it selects; null when the path finds nothing, the value as text
in a `string` column (a map or list as Go's sorted JSON), a JSON integer / number / boolean in a
column of that type (null when the value is not one), and a `date` column's timestamp as an age.
Each row carries the object's metadata (`PartialObjectMetadata`), as upstream's default
`includeObject=Metadata`.

Must not: change state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpupool.sandbox.kubeapi.jsonpath import find
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.printers import Cell, age, columns_for
from gpupool.sandbox.kubeapi.resources import ResourceType

JsonObject = dict[str, Any]
_NUMBERS = {"Restarts", "Data", "Secrets", "Webhooks", "Active"}


@dataclass(frozen=True)
class _Column:
    name: str
    type: str
    priority: int
    cell: Cell
    description: str
    format: str


def wants_table(accept: str) -> bool:
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def _text(value: Any) -> str:
    """A value as a `string` column prints it (Go's `%v` of the decoded JSON value)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format(value, "g") if isinstance(value, float) else str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)  # Go sorts a map's keys


def _custom_cell(found: list[Any], kind: str, now: datetime) -> Any:
    """The first value the column's path selects, as its type prints it (upstream reads only
    the first of several)."""
    if not found or found[0] is None:
        return None
    value = found[0]
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
    return None


# ObjectMeta's own documentation of `name`, which upstream gives the Name column of every Table.
NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)


def _custom_columns(rt: ResourceType) -> list[_Column]:
    columns = [_Column("Name", "string", 0, lambda obj, _now: metadata(obj).get("name"), NAME_DOC, "name")]
    for column in rt.printer_columns:

        def cell(
            obj: JsonObject, now: datetime, path: str = column.json_path, kind: str = column.type
        ) -> Any:
            return _custom_cell(find(obj, path), kind, now)

        columns.append(
            _Column(column.name, column.type, column.priority, cell, column.description, column.format)
        )
    return columns


def _columns(rt: ResourceType) -> list[_Column]:
    if not rt.builtin:
        return _custom_columns(rt)
    return [
        _Column(
            name,
            "integer" if name in _NUMBERS else "string",
            priority,
            cell,
            name,
            "name" if name == "Name" else "",
        )
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
            "cells": [column.cell(obj, now) for column in columns],
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
            "name": column.name,
            "type": column.type,
            "format": column.format,
            "description": column.description,
            "priority": column.priority,
        }
        for column in columns
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions if with_definitions else None,  # upstream: NoHeaders → null
        "rows": rows,
    }
