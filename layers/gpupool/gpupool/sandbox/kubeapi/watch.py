"""Watch streams: newline-delimited JSON events, as `kubernetes.watch.Watch` consumes them.

Without a resourceVersion (or with "0"), or with `sendInitialEvents=true`, the stream opens
with ADDED for every matching object (then, with bookmarks and `sendInitialEvents`, a BOOKMARK
annotated `k8s.io/initial-events-end`); otherwise it replays history after the given version,
or sends one ERROR event with a 410 Expired Status when history no longer reaches back that
far. Objects are rendered by the caller's `render` (plain JSON, a Table row, metadata only).
With selectors, an object that starts or stops matching is reported as ADDED or DELETED (the
DELETED one carrying the object as it last matched, at the new resourceVersion), as
upstream's watch cache does. The stream ends after `timeoutSeconds` (wall time) or when the
server stops.

Must not: hold the store lock while a line is written to a socket.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.operations import ApiOperations
from gpupool.sandbox.kubeapi.resources import ResourceType
from gpupool.sandbox.kubeapi.selectors import FieldSelector, LabelSelector
from gpupool.sandbox.kubeapi.store import Entry, WatchEvent

JsonObject = dict[str, Any]
Render = Callable[[ResourceType, Entry], bytes]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _line(kind: str, encoded: bytes) -> bytes:
    return b'{"type":"' + kind.encode() + b'","object":' + encoded + b"}\n"


def _expired(resource_version: int) -> bytes:
    error = errors.gone(f"too old resource version: {resource_version}")
    return _line("ERROR", json.dumps(error.status_body()).encode())


def _bookmark(rt: ResourceType, resource_version: int, *, initial_events_end: bool = False) -> bytes:
    meta: JsonObject = {"resourceVersion": str(resource_version)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    marker = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
    return _line("BOOKMARK", json.dumps(marker).encode())


class _Filter:
    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        render: Render,
    ) -> None:
        self.rt, self.namespace, self.labels, self.fields = rt, namespace, labels, fields
        self.render = render

    def matches(self, obj: JsonObject | None) -> bool:
        if obj is None:
            return False
        return self.labels.matches(metadata(obj).get("labels") or {}) and self.fields.matches(obj)

    def translate(self, event: WatchEvent) -> bytes | None:
        if event.key != self.rt.storage_key or (
            self.namespace is not None and event.namespace != self.namespace
        ):
            return None
        now_matches = self.matches(event.entry.obj)
        if event.type == "MODIFIED":
            before = self.matches(event.previous)
            kind = {(True, True): "MODIFIED", (True, False): "ADDED", (False, True): "DELETED"}.get(
                (now_matches, before)
            )
            if kind == "DELETED" and event.previous is not None:
                # Upstream's cacher: the object as the watcher last saw it (the one that matched),
                # at the event's resourceVersion.
                last_seen = copy.deepcopy(event.previous)
                metadata(last_seen)["resourceVersion"] = metadata(event.entry.obj).get("resourceVersion")
                return _line(kind, self.render(self.rt, Entry(last_seen)))
        else:
            kind = (
                event.type
                if now_matches or (event.type == "DELETED" and self.matches(event.previous))
                else None
            )
        return None if kind is None else _line(kind, self.render(self.rt, event.entry))


def watch_lines(
    cluster: ApiOperations,
    rt: ResourceType,
    namespace: str | None,
    labels: LabelSelector,
    fields: FieldSelector,
    *,
    resource_version: str,
    timeout_seconds: float,
    bookmarks: bool = False,
    send_initial_events: bool | None = None,
    render: Render | None = None,
) -> Iterator[bytes]:
    """Check the request now (bad input raises before any byte is sent), then stream lazily."""
    chosen = _Filter(rt, namespace, labels, fields, render or cluster.encode)
    if send_initial_events or (send_initial_events is None and resource_version in ("", "0")):
        entries, cursor = cluster.matching_entries(rt, namespace, labels, fields)
        entries.sort(key=lambda e: (metadata(e.obj).get("namespace", ""), metadata(e.obj)["name"]))
        initial = [_line("ADDED", chosen.render(rt, entry)) for entry in entries]
        if send_initial_events and bookmarks:
            initial.append(_bookmark(rt, cursor, initial_events_end=True))
    else:
        try:
            cursor = int(resource_version)
        except ValueError as exc:
            raise errors.bad_request(f"invalid resourceVersion {resource_version!r}") from exc
        initial = []
    return _follow(cluster, chosen, initial, cursor, time.monotonic() + timeout_seconds, bookmarks)


BOOKMARK_EVERY_S = 60.0


def _next_bookmark(now: float, deadline: float) -> float | None:
    """Upstream's next bookmark time: a minute on, or 2 s before the deadline if sooner; none once
    that moment has passed."""
    at = min(now + BOOKMARK_EVERY_S, deadline - 2.0)
    return at if at >= now else None


def _follow(
    cluster: ApiOperations,
    chosen: _Filter,
    initial: list[bytes],
    cursor: int,
    deadline: float,
    bookmarks: bool,
) -> Iterator[bytes]:
    """Yield event lines until the deadline passes or the server closes.

    With `bookmarks`, a BOOKMARK carrying the latest resourceVersion goes out when upstream's
    cacher sends one (`nextBookmarkTime`): 2 s before the deadline, and every minute before
    that — so a client resumes from there even if nothing it watches changed. A watch shorter
    than 2 s gets none.
    """
    store = cluster.store
    yield from initial
    next_bookmark = _next_bookmark(time.monotonic(), deadline) if bookmarks else None
    while True:
        with store.changed:
            while True:
                events = store.events_after(cursor)
                if events is None:
                    break
                now = time.monotonic()
                remaining = deadline - now
                due = next_bookmark is not None and now >= next_bookmark
                if events or store.closed or remaining <= 0 or due:
                    break
                wake = remaining if next_bookmark is None else min(remaining, next_bookmark - now)
                store.changed.wait(min(wake, 1.0))
            if events is None:
                lines = [_expired(cursor)]
            elif not events:
                if next_bookmark is None or time.monotonic() < next_bookmark:
                    return
                next_bookmark = _next_bookmark(time.monotonic(), deadline)
                lines = [_bookmark(chosen.rt, cursor)]
            else:
                cursor = events[-1].resource_version
                lines = [line for event in events if (line := chosen.translate(event)) is not None]
        yield from lines
        if events is None:
            return
