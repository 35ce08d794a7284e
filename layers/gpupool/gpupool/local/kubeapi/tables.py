"""Server-side printing for kubectl: `meta.k8s.io/v1 Table` answers when the client asks.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`; the real server
then prints columns itself. We print Name (plus Status for pods and namespaces) and Age.

Must not: change state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpupool.local.kubeapi.objects import metadata
from gpupool.local.kubeapi.resources import ResourceType
from gpupool.local.kubeapi.selectors import field_value

JsonObject = dict[str, Any]


def wants_table(accept: str) -> bool:
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def _age(created: str | None, now: datetime) -> str:
    if not created:
        return "<unknown>"
    seconds = int((now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds())
    seconds = max(seconds, 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _column(name: str, fmt: str = "") -> JsonObject:
    return {"name": name, "type": "string", "format": fmt, "description": name, "priority": 0}


def _printed(value: str) -> str:
    return value if value else "<none>"


def table(objects: list[JsonObject], *, rt: ResourceType, resource_version: str, now: datetime) -> JsonObject:
    """Name, then a CRD's printer columns (or Status for pods and namespaces), then Age."""
    with_status = rt.builtin and rt.kind in ("Pod", "Namespace")
    extra = [
        (name, kind, path.lstrip(".")) for name, kind, path in rt.printer_columns if path.startswith(".")
    ]
    own_age = not any(name == "Age" for name, _kind, _path in extra)
    columns = [_column("Name", fmt="name")]
    columns += [_column(name) for name, _kind, _path in extra]
    if with_status:
        columns.append(_column("Status"))
    if own_age:
        columns.append(_column("Age"))
    rows = []
    for obj in objects:
        meta = metadata(obj)
        cells: list[Any] = [meta.get("name")]
        for _name, kind, path in extra:
            value = field_value(obj, path)
            cells.append(_age(value, now) if kind == "date" and value else _printed(value))
        if with_status:
            cells.append((obj.get("status") or {}).get("phase", ""))
        if own_age:
            cells.append(_age(meta.get("creationTimestamp"), now))
        rows.append(
            {
                "cells": cells,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta},
            }
        )
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns,
        "rows": rows,
    }
