"""Response formats a client may ask for in `Accept`: plain JSON, `Table`, metadata only.

`as=Table;g=meta.k8s.io` → a Table (`tables`); `as=PartialObjectMetadata[List];g=meta.k8s.io`
→ only kind, apiVersion and metadata of each object, as upstream's metadata-only client
(informers of `metadata` clients, `kubectl get -o name` on some versions) reads them. Lists
come in (namespace, name) order; watch events carry the same rendering per object.

Must not: change state or parse anything but the `Accept` header.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from gpupool.sandbox.kubeapi import tables
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.resources import ResourceType
from gpupool.sandbox.kubeapi.store import Entry

JsonObject = dict[str, Any]
META = "meta.k8s.io/v1"


class _Encoder(Protocol):
    def encode(self, rt: ResourceType, entry: Entry) -> bytes: ...


def wants_metadata(accept: str) -> bool:
    return "as=PartialObjectMetadata" in accept and "g=meta.k8s.io" in accept


def partial(obj: JsonObject) -> JsonObject:
    return {"kind": "PartialObjectMetadata", "apiVersion": META, "metadata": metadata(obj)}


def single(obj: JsonObject, rt: ResourceType, accept: str, now: datetime) -> JsonObject:
    if tables.wants_table(accept):
        version = str(metadata(obj).get("resourceVersion", ""))
        return tables.table([obj], rt=rt, resource_version=version, now=now)
    if wants_metadata(accept):
        return partial(obj)
    return obj


def _ordered(objects: list[JsonObject]) -> list[JsonObject]:
    return sorted(objects, key=lambda o: (metadata(o).get("namespace", ""), metadata(o).get("name", "")))


def collection(
    objects: list[JsonObject], rt: ResourceType, accept: str, resource_version: str, clock_now: datetime
) -> JsonObject:
    ordered = _ordered(objects)
    if tables.wants_table(accept):
        return tables.table(ordered, rt=rt, resource_version=resource_version, now=clock_now)
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": META,
        "metadata": {"resourceVersion": resource_version},
        "items": [partial(obj) for obj in ordered],
    }


def watch_renderer(
    rt: ResourceType, accept: str, now: Callable[[], datetime]
) -> Callable[[ResourceType, Entry], bytes] | None:
    """How watch events render objects for this `Accept` (None: as stored)."""
    if tables.wants_table(accept):
        first = [True]

        def as_table(served: ResourceType, entry: Entry) -> bytes:
            version = str(metadata(entry.obj).get("resourceVersion", ""))
            printed = tables.table(
                [entry.obj], rt=served, resource_version=version, now=now(), with_definitions=first[0]
            )
            first[0] = False
            return json.dumps(printed, separators=(",", ":")).encode()

        return as_table
    if wants_metadata(accept):
        return lambda _served, entry: json.dumps(partial(entry.obj), separators=(",", ":")).encode()
    return None
