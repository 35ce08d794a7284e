"""Server-side printing for kubectl: `meta.k8s.io/v1 Table` answers when the client asks.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`; the real server
then prints columns itself. We print Name (plus Status for pods and namespaces) and Age.

Must not: change state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpupool.local.kubeapi.objects import metadata

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


def table(objects: list[JsonObject], *, kind: str, resource_version: str, now: datetime) -> JsonObject:
    with_status = kind in ("Pod", "Namespace")
    columns: list[JsonObject] = [
        {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}
    ]
    if with_status:
        columns.append(
            {"name": "Status", "type": "string", "format": "", "description": "Phase", "priority": 0}
        )
    columns.append({"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0})
    rows = []
    for obj in objects:
        meta = metadata(obj)
        cells: list[Any] = [meta.get("name")]
        if with_status:
            cells.append((obj.get("status") or {}).get("phase", ""))
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
