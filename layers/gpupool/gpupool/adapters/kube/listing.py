"""List+watch, the one implementation: list a kind, then keep it current from the list's resourceVersion.

Role: `Reflector(decoder, store, list_page=…, open_watch=…)` is client-go's reflector loop, for
every reader of a kind (`WatchedList` here, the relay's long-lived `relay.watching.ListWatch`):
`relist()` lists the kind page by page (`limit` / `continue`, later pages continuing the first
page's snapshot), hands the listing to the store (`replace`) and keeps its resourceVersion;
`follow()` watches from there (`allowWatchBookmarks`: the server replays every change since) and
hands each change to the store (`change`); a BOOKMARK only moves the resourceVersion on. When the
history no longer reaches back (an ERROR event with a 410 Status, or a 410 answer) `follow` raises
`Expired` and the caller relists; another ERROR event raises `WatchError`. How long a watch lasts
is `open_watch`'s (`stream_lines`). Decoders read pages and events into what the store keeps:
`ObjectDecoder` into a model, `kube.tables` into rows, the relay's into plain JSON objects.

`WatchedList(decoder, list_page=…, open_watch=…)`: the functions' reader. `read()` returns every
object of the kind in (namespace, name) order, as a list would now: the first read relists, each
later one follows one short watch (`kube.reader` ends it once the server is quiet, or soon at the
most) without reading the objects that did not change. A full list is read with the cyclic garbage
collector paused, then frozen out of its walks (`gc.freeze`): the kept objects hold no cycles and
live as long as the function, and walking a 5,000-node cluster's worth at every full collection
cost more than reading it. An object the model cannot read is reported (`decoder`) and left out.

Must not: decide anything, retry or back off (the relay's ListWatch does), translate errors (the
fetchers do), or keep anything but parsed objects at the resourceVersion the server gave them.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel
from urllib3.exceptions import HTTPError

from gpupool.adapters.kube.reading import read_each, read_page
from gpupool.core.model.unreadable import UnreadableObject

__all__ = [
    "Change",
    "Expired",
    "Key",
    "ListPage",
    "ObjectDecoder",
    "OpenWatch",
    "Page",
    "Reflector",
    "Store",
    "WatchError",
    "WatchedList",
    "expired_status",
    "object_key",
    "raw_key",
    "stream_lines",
    "watch_event",
]

Item = TypeVar("Item")
Model = TypeVar("Model", bound=BaseModel)
Key = tuple[str, str]  # (namespace or "", name): the list order
# continue token (None: the first page) → the raw JSON of one page
ListPage = Callable[[str | None], bytes]
# resourceVersion → the stream's lines until it ends; raises Expired on a 410 answer
OpenWatch = Callable[[str], Iterator[bytes]]


class Expired(Exception):
    """The server's watch history no longer reaches the resourceVersion asked for (410 Gone)."""


class WatchError(RuntimeError):
    """A watch's ERROR event other than 410 Gone; `status` is its Status code (0 when it has none)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Page(Generic[Item]):
    objects: list[tuple[Key, Item]]
    resource_version: str
    continue_: str | None


@dataclass(frozen=True)
class Change(Generic[Item]):
    """One watch event: `obj` is the object as the decoder reads it (None for a BOOKMARK, and, as
    `ObjectDecoder` and the Table decoders read them, for DELETED or an unreadable object)."""

    type: str
    key: Key | None
    obj: Item | None
    resource_version: str


class Decoder(Protocol[Item]):
    def page(self, raw: bytes) -> Page[Item]: ...

    def change(self, line: bytes) -> Change[Item]: ...


class Store(Protocol[Item]):
    """Where a Reflector puts what it reads."""

    def replace(self, objects: list[tuple[Key, Item]]) -> None:
        """A full listing: every object that exists now (what is missing from it is gone)."""
        ...

    def change(self, change: Change[Item]) -> None:
        """One watched change of one object (never a BOOKMARK)."""
        ...


def object_key(meta: Any) -> Key:
    return (getattr(meta, "namespace", None) or "", getattr(meta, "name", None) or "")


def expired_status(status: dict[str, Any]) -> bool:
    return status.get("code") == 410 or status.get("reason") in ("Expired", "Gone")


def watch_event(line: bytes, kind: str) -> tuple[str, dict[str, Any]]:
    """One watch line's (type, object); an ERROR event raises: `Expired` for 410 Gone (list again),
    else `WatchError` naming `kind`."""
    event = json.loads(line)
    event_type, raw = str(event.get("type") or ""), event.get("object") or {}
    if event_type == "ERROR":
        if expired_status(raw):
            raise Expired(str(raw.get("message") or "resourceVersion too old"))
        code = raw.get("code")
        status = code if isinstance(code, int) else 0
        raise WatchError(f"watch {kind}: {raw.get('message') or raw}", status=status)
    return event_type, raw


def stream_lines(
    response: Any, *, deadline: float | None = None, quiet_ends: bool = False
) -> Iterator[bytes]:
    """The lines of a watch stream (a urllib3 response) until the server ends it, or past
    `deadline` (monotonic seconds), or — `quiet_ends` — once a read fails (with a read timeout set,
    the server has been quiet that long); without `quiet_ends` a failed read raises. The connection
    is closed, not pooled, since the stream may be unfinished."""
    buffer = b""
    try:
        for chunk in response.stream(amt=None, decode_content=False):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            yield from lines
            if deadline is not None and time.monotonic() >= deadline:
                return
    except (HTTPError, OSError):
        if not quiet_ends:
            raise
        return
    finally:
        response.close()
        response.release_conn()


def _metadata(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = raw.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def raw_key(raw: Mapping[str, Any]) -> Key:
    """The (namespace, name) of an object as the server sent it."""
    meta = _metadata(raw)
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


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
        version = str(_metadata(raw).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            return Change(kind, None, None, version)
        if kind == "DELETED":
            return Change(kind, raw_key(raw), None, version)
        readable = read_each(self._model, [raw], kind=self._kind, report=self._report)
        return Change(kind, raw_key(raw), readable[0] if readable else None, version)


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


class Reflector(Generic[Item]):
    """List, then follow watches from the list's resourceVersion, into `store`.

    `freeze_lists`: decode each list page with the collector paused and freeze what was read (for
    objects kept as long as the process: the functions' WatchedList)."""

    def __init__(
        self,
        decoder: Decoder[Item],
        store: Store[Item],
        *,
        list_page: ListPage,
        open_watch: OpenWatch,
        freeze_lists: bool = False,
    ) -> None:
        self._decoder, self._store = decoder, store
        self._list_page, self._open_watch = list_page, open_watch
        self._freeze = freeze_lists
        self.resource_version: str | None = None  # None: never listed

    def relist(self) -> None:
        """List the kind in full and hand the listing to the store."""
        objects: list[tuple[Key, Item]] = []
        version: str | None = None
        token: str | None = None
        while True:
            raw = self._list_page(token)
            if self._freeze:
                with _collector_paused():
                    page = self._decoder.page(raw)
            else:
                page = self._decoder.page(raw)
            if version is None:  # later pages continue the first page's snapshot
                version = page.resource_version
            objects.extend(page.objects)
            token = page.continue_
            if not token:
                break
        self._store.replace(objects)
        self.resource_version = version or "0"

    def follow(self) -> None:
        """One watch from the resourceVersion reached (list first if never listed), each change
        to the store; raises `Expired` when the history no longer reaches back."""
        if self.resource_version is None:
            self.relist()
        lines = self._open_watch(str(self.resource_version))
        try:
            for line in lines:
                if not line.strip():
                    continue
                change = self._decoder.change(line)
                if change.key is not None:
                    self._store.change(change)
                if change.resource_version:
                    self.resource_version = change.resource_version
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()


class WatchedList(Generic[Model]):
    def __init__(self, decoder: Decoder[Model], *, list_page: ListPage, open_watch: OpenWatch) -> None:
        self._objects: dict[Key, Model] = {}
        self._ordered: list[Model] | None = None
        self._reflector = Reflector(
            decoder, self, list_page=list_page, open_watch=open_watch, freeze_lists=True
        )

    @property
    def resource_version(self) -> str | None:
        """The resourceVersion the kept objects are at (None before the first read)."""
        return self._reflector.resource_version

    def read(self) -> list[Model]:
        if self._reflector.resource_version is None:
            self._reflector.relist()
        else:
            try:
                self._reflector.follow()
            except Expired:
                self._reflector.relist()
        if self._ordered is None:
            self._ordered = [self._objects[k] for k in sorted(self._objects)]
        return list(self._ordered)

    # ---- the reflector's store ---------------------------------------------------------------
    def replace(self, objects: list[tuple[Key, Model]]) -> None:
        self._objects, self._ordered = dict(objects), None

    def change(self, change: Change[Model]) -> None:
        self._ordered = None
        if change.obj is None or change.type == "DELETED":  # deleted, or no longer readable (reported)
            self._objects.pop(change.key or ("", ""), None)
        else:
            self._objects[change.key or ("", "")] = change.obj
