"""Listing a kind once, then keeping it current from the list's resourceVersion with short watches.

Role: `WatchedList(decoder, list_page=…, open_watch=…)`; `read()` returns every object of the kind,
in (namespace, name) order as a list returns them. The first read lists the kind in full, page by
page (`limit` / `continue`), keeping each object under its (namespace, name) and the resourceVersion
the list was served at. Each later read watches from that resourceVersion — the API server replays
every change since (client-go's reflector resumes the same way) — and applies the events: ADDED and
MODIFIED replace the object, DELETED forgets it, BOOKMARK only moves the resourceVersion on. The
watch is short and bounded: `open_watch` ends its stream once the server has been quiet for a
moment, or after a short while at most (`kube.reader`); the events come in resourceVersion order, so
what was kept is the kind's state at the last one. When the server's history no longer reaches back
(an ERROR event with a 410 Status, or a 410 answer: `Expired`) the kind is listed in full again, as
client-go relists. A full list is read with the cyclic garbage collector paused, and what it read is
then frozen out of the collector's walks (`gc.freeze`): the kept objects hold no reference cycles
and live as long as the function, and walking a 5,000-node cluster's worth at every full collection
cost more than reading it. An object the model cannot read is reported (`decoder`) and left out, on
either path. What a read returns is what a list at that moment returns, without reading or parsing
the objects that did not change.

`ObjectDecoder(model, kind=…, report=…)` reads pages and events of whole objects into a model;
`kube.tables` reads `Table` pages and events into node and GPUNode summaries.

Must not: decide anything, retry, translate errors (the fetchers do), or keep anything but parsed
objects at the resourceVersion the server gave them.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from gpupool.adapters.kube.reading import read_each, read_page
from gpupool.core.model.unreadable import UnreadableObject

__all__ = [
    "Change",
    "Expired",
    "ListPage",
    "ObjectDecoder",
    "OpenWatch",
    "Page",
    "WatchedList",
    "expired_status",
    "object_key",
    "watch_event",
]

Model = TypeVar("Model", bound=BaseModel)
Key = tuple[str, str]  # (namespace or "", name): the list order
# continue token (None: the first page) → the raw JSON of one page
ListPage = Callable[[str | None], bytes]
# resourceVersion → the stream's lines until it is quiet or ends; raises Expired on a 410 answer
OpenWatch = Callable[[str], Iterator[bytes]]


class Expired(Exception):
    """The server's watch history no longer reaches the resourceVersion asked for (410 Gone)."""


@dataclass(frozen=True)
class Page(Generic[Model]):
    objects: list[tuple[Key, Model]]
    resource_version: str
    continue_: str | None


@dataclass(frozen=True)
class Change(Generic[Model]):
    """One watch event: `obj` is the object now (None when DELETED, a BOOKMARK, or unreadable)."""

    type: str
    key: Key | None
    obj: Model | None
    resource_version: str


class Decoder(Protocol[Model]):
    def page(self, raw: bytes) -> Page[Model]: ...

    def change(self, line: bytes) -> Change[Model]: ...


def object_key(meta: Any) -> Key:
    return (getattr(meta, "namespace", None) or "", getattr(meta, "name", None) or "")


def expired_status(status: dict[str, Any]) -> bool:
    return status.get("code") == 410 or status.get("reason") in ("Expired", "Gone")


def watch_event(line: bytes, kind: str) -> tuple[str, dict[str, Any]]:
    """One watch line's (type, object); an ERROR event raises: `Expired` for 410 Gone (list again),
    else RuntimeError naming `kind`."""
    event = json.loads(line)
    event_type, raw = str(event.get("type") or ""), event.get("object") or {}
    if event_type == "ERROR":
        if expired_status(raw):
            raise Expired(str(raw.get("message") or "resourceVersion too old"))
        raise RuntimeError(f"watch {kind}: {raw.get('message') or raw}")
    return event_type, raw


class ObjectDecoder(Generic[Model]):
    """Pages and watch events of whole objects, read into `model`."""

    def __init__(self, model: type[Model], *, kind: str, report: Callable[[UnreadableObject], None]) -> None:
        self._model, self._kind, self._report = model, kind, report

    def page(self, raw: bytes) -> Page[Model]:
        objects, meta = read_page(self._model, raw, kind=self._kind, report=self._report)
        keyed = [(object_key(getattr(o, "metadata", None)), o) for o in objects]
        return Page(keyed, meta.resource_version, meta.continue_ or None)

    def change(self, line: bytes) -> Change[Model]:
        kind, raw = watch_event(line, self._kind)
        meta = raw.get("metadata") or {}
        version = str(meta.get("resourceVersion") or "")
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if kind == "BOOKMARK":
            return Change(kind, None, None, version)
        if kind == "DELETED":
            return Change(kind, key, None, version)
        readable = read_each(self._model, [raw], kind=self._kind, report=self._report)
        return Change(kind, key, readable[0] if readable else None, version)


_paused = {"depth": 0, "was_enabled": True}
_pause_lock = threading.Lock()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading a big list allocates hundreds of thousands of objects in no reference cycle; the
    cyclic collector would walk every object kept so far each time it ran meanwhile (its cost
    grows with what is alive), so it waits until the list is read (lists read on several threads
    at once share one pause). Refcounting frees as usual."""
    with _pause_lock:
        if _paused["depth"] == 0:
            _paused["was_enabled"] = gc.isenabled()
            gc.disable()
        _paused["depth"] += 1
    try:
        yield
    finally:
        with _pause_lock:
            _paused["depth"] -= 1
            if _paused["depth"] == 0:
                gc.freeze()  # what was just read is kept for the function's life: out of the collector's walk
                if _paused["was_enabled"]:
                    gc.enable()


class WatchedList(Generic[Model]):
    def __init__(self, decoder: Decoder[Model], *, list_page: ListPage, open_watch: OpenWatch) -> None:
        self._decoder, self._list_page, self._open_watch = decoder, list_page, open_watch
        self._objects: dict[Key, Model] = {}
        self._version: str | None = None  # None: never listed
        self._ordered: list[Model] | None = None

    @property
    def resource_version(self) -> str | None:
        """The resourceVersion the kept objects are at (None before the first read)."""
        return self._version

    def read(self) -> list[Model]:
        if self._version is None:
            self._list()
        else:
            try:
                self._follow(self._version)
            except Expired:
                self._list()
        if self._ordered is None:
            self._ordered = [self._objects[k] for k in sorted(self._objects)]
        return list(self._ordered)

    def _list(self) -> None:
        objects: dict[Key, Model] = {}
        version: str | None = None
        token: str | None = None
        while True:
            raw = self._list_page(token)
            with _collector_paused():
                page = self._decoder.page(raw)
            if version is None:  # later pages continue the first page's snapshot
                version = page.resource_version
            objects.update(page.objects)
            token = page.continue_
            if not token:
                break
        self._objects, self._version, self._ordered = objects, version or "0", None

    def _follow(self, since: str) -> None:
        lines = self._open_watch(since)
        try:
            for line in lines:
                if not line.strip():
                    continue
                change = self._decoder.change(line)
                if change.key is not None:
                    self._ordered = None
                    if change.obj is None:  # deleted, or no longer readable (reported)
                        self._objects.pop(change.key, None)
                    else:
                        self._objects[change.key] = change.obj
                if change.resource_version:
                    self._version = change.resource_version
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()
