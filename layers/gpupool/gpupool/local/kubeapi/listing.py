"""Lists as kube-apiserver answers them: ordered by namespace then name, paged, versioned.

Every list (paged or not) is sorted by (namespace, name), as etcd's key order makes it
upstream. `limit` / `continue` page through that order; the token encodes the last key.
A `resourceVersion` newer than the server's is waited for briefly and then refused with
upstream's 504 "Too large resource version"; `resourceVersionMatch=Exact` on any version but
the current one is 410 Expired (the sandbox keeps no old snapshots).

Must not: filter (the caller passes matched entries) or change state.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

from gpupool.local.kubeapi import errors
from gpupool.local.kubeapi.objects import metadata
from gpupool.local.kubeapi.resources import ResourceType
from gpupool.local.kubeapi.storage import Entry, ObjectStorage

JsonObject = dict[str, Any]


def _key(entry: Entry) -> tuple[str, str]:
    return entry.key


def list_body(
    rt: ResourceType,
    entries: list[Entry],
    resource_version: int,
    encode: Callable[[Entry], bytes],
    *,
    limit: int = 0,
    continue_token: str = "",
) -> bytes:
    """The encoded list of `entries` (already matched), in key order, one page of it if asked."""
    entries = sorted(entries, key=_key)
    list_meta: JsonObject = {"resourceVersion": str(resource_version)}
    if continue_token:
        start = _decode_continue(continue_token)
        entries = [e for e in entries if _key(e) > start]
    if limit > 0 and len(entries) > limit:
        last = metadata(entries[limit - 1].obj)
        token = json.dumps([last.get("namespace", ""), last["name"]]).encode()
        list_meta["continue"] = base64.urlsafe_b64encode(token).decode()
        list_meta["remainingItemCount"] = len(entries) - limit
        entries = entries[:limit]
    head = json.dumps({"kind": rt.list_kind_name, "apiVersion": rt.api_version, "metadata": list_meta})
    served = rt.api_version
    items = b",".join(
        entry.encoded if entry.obj.get("apiVersion") == served else encode(entry) for entry in entries
    )
    return head[:-1].encode() + b',"items":[' + items + b"]}"


def sorted_objects(entries: list[Entry]) -> list[JsonObject]:
    return [entry.obj for entry in sorted(entries, key=_key)]


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(namespace), str(name)
    except (ValueError, TypeError) as exc:
        raise errors.bad_request("invalid continue token") from exc


def _requested(resource_version: str) -> int | None:
    if resource_version in ("", "0"):
        return None
    try:
        return int(resource_version)
    except ValueError as exc:
        raise errors.bad_request(f"invalid resource version: {resource_version!r}") from exc


def wait_for_version(store: ObjectStorage, resource_version: str, wait_seconds: float) -> None:
    """Return once the store has reached `resource_version`; 504 Timeout if it does not in time."""
    wanted = _requested(resource_version)
    if wanted is None:
        return
    deadline = time.monotonic() + wait_seconds
    with store.changed:
        while store.resource_version < wanted:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or store.closed:
                raise too_large(wanted, store.resource_version)
            store.changed.wait(remaining)


def too_large(wanted: int, current: int) -> errors.ApiError:
    return errors.ApiError(
        504,
        "Timeout",
        f"Too large resource version: {wanted}, current: {current}",
        details={
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def check_exact(store: ObjectStorage, resource_version: str, match: str) -> None:
    if match == "Exact" and _requested(resource_version) not in (None, store.resource_version):
        raise errors.gone("The resourceVersion for the provided list is too old.")
