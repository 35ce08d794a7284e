"""Lists as kube-apiserver answers them: ordered by namespace then name, paged, versioned.

Every list (paged or not) is sorted by (namespace, name), as etcd's key order makes it
upstream. `limit` / `continue` page through that order; the token encodes the last key.
`select_page` finds a page's start by bisection in the (cached) sorted entries and filters only
until the page is full, so paging through a big kind costs each page its own size, not the
kind's. As upstream, `remainingItemCount` is given only when no selector filters the list
(upstream: "not set if the list request contains label or field selectors"), and `continue` is
given whenever objects follow the page's last one, matching or not (a page may then hold
fewer than `limit` items, or none).
A `resourceVersion` newer than the server's is waited for briefly and then refused with
upstream's 504 "Too large resource version"; `resourceVersionMatch=Exact` on any version but
the current one is 410 Expired (the sandbox keeps no old snapshots), and so is a paged list
(`limit`) naming a version without a match, which upstream reads as Exact (the API concepts'
"semantics for list" table). `resourceVersion=0` ("any version") is served as kube-apiserver's
watch cache serves it: the newest state, in one response — a `limit` with it is ignored and no
`continue` is given (`shouldDelegateList` sends such lists to the cache, which does not page;
servers with the cache-snapshot pagination of v1.33+ may page them). Without a resourceVersion a
list is the newest state ("most recent").

Must not: change state, or parse selectors (the caller passes the predicate).
"""

from __future__ import annotations

import base64
import bisect
import json
import time
from collections.abc import Callable
from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.resources import ResourceType
from gpupool.sandbox.kubeapi.store import Entry, Store

JsonObject = dict[str, Any]


def _key(entry: Entry) -> tuple[str, str]:
    return entry.key


def select_page(
    entries: list[Entry],
    matches: Callable[[Entry], bool] | None,
    *,
    limit: int = 0,
    continue_token: str = "",
) -> tuple[list[Entry], JsonObject]:
    """The matching entries of one page of `entries` (sorted by key), and what the page adds
    to the list's metadata (`continue`, `remainingItemCount`)."""
    index = bisect.bisect_right(entries, _decode_continue(continue_token), key=_key) if continue_token else 0
    page: list[Entry] = []
    total = len(entries)
    while index < total and (limit <= 0 or len(page) < limit):
        entry = entries[index]
        index += 1
        if matches is None or matches(entry):
            page.append(entry)
    extra: JsonObject = {}
    if limit > 0 and index < total and page:
        last = metadata(page[-1].obj)
        token = json.dumps([last.get("namespace", ""), last["name"]]).encode()
        extra["continue"] = base64.urlsafe_b64encode(token).decode()
        if matches is None:
            extra["remainingItemCount"] = total - index
    return page, extra


def list_body(
    rt: ResourceType,
    entries: list[Entry],
    resource_version: int,
    encode: Callable[[Entry], bytes],
    *,
    extra_metadata: JsonObject | None = None,
) -> bytes:
    """The encoded list of `entries` (one page, already selected, in key order)."""
    list_meta: JsonObject = {"resourceVersion": str(resource_version), **(extra_metadata or {})}
    if not rt.builtin:
        # An unstructured list always carries `continue` ("" on the last page); a typed one omits it.
        list_meta.setdefault("continue", "")
    head = json.dumps({"kind": rt.list_kind_name, "apiVersion": rt.api_version, "metadata": list_meta})
    served = rt.api_version
    if rt.builtin:
        items = b",".join(entry.encoded_item for entry in entries)
    else:
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


def wait_for_version(store: Store, resource_version: str, wait_seconds: float) -> None:
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


def effective_match(resource_version: str, match: str, limit: int) -> str:
    """The match upstream applies: a paged list naming a version (not 0) without one is Exact."""
    if not match and limit > 0 and _requested(resource_version) is not None:
        return "Exact"
    return match


def served_limit(resource_version: str, limit: int) -> int:
    """The page size served: none for resourceVersion=0 (the watch cache's whole list)."""
    return 0 if resource_version == "0" else limit


def check_exact(store: Store, resource_version: str, match: str) -> None:
    if match == "Exact" and _requested(resource_version) not in (None, store.resource_version):
        raise errors.gone("The resourceVersion for the provided list is too old.")
