"""The relay's list+watch: one thread per resource on the shared `kube.listing.Reflector`.

Role: `ListWatch.run()` (one thread per resource) runs the list+watch that `gpupool.adapters.kube.
listing.Reflector` implements for every reader (the functions' `WatchedList` too) on a kubernetes
client lister (`list_pod_for_all_namespaces`, `list_cluster_custom_object`, …): it relists once and
hands the whole listing to its `Store` (`replace`: the store reports what vanished since its last
listing as deleted, so a re-list misses nothing), reports it synced, then follows watches from the
newest resourceVersion it knows (bookmarks included: `allowWatchBookmarks`), each until the server
ends it (`timeoutSeconds`), and hands each change to the store (`change`). A `410 Gone` (history
compacted) re-lists. Any other error — the store's included — backs off (capped exponential with
jitter) and re-lists. Restarts are counted by reason. A kind whose resource does not exist (404:
Karpenter's CRD absent) is reported synced and idle.

Must not: interpret or keep objects (the store does: `informers.SharedInformer`), or list and
watch other than through the Reflector.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3
from kubernetes import client as _client

from gpupool.adapters.kube.listing import (
    Change,
    Expired,
    Key,
    Page,
    Reflector,
    WatchError,
    raw_key,
    stream_lines,
    watch_event,
)
from gpupool_incluster.relay.metrics import RelayMetrics

__all__ = ["ListWatch", "Store", "WatchTimings"]

log = logging.getLogger("gpupool.relay.watch")
client: Any = _client


class Store(Protocol):
    """Where a ListWatch puts what it reads (raw objects, as the API server sent them)."""

    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A full listing: every object that exists now (what is missing from it is gone)."""
        ...

    def change(self, obj: Mapping[str, Any], deleted: bool) -> None:
        """One watched change: the object as it is now, or as it was when deleted."""
        ...


@dataclass(frozen=True, slots=True)
class WatchTimings:
    watch_seconds: int = 300
    first_backoff: float = 0.5
    max_backoff: float = 30.0


class _Stopped(Exception):
    """The relay is stopping: leave the listing or the stream unread."""


class _JsonDecoder:
    """Pages and watch events as the plain JSON objects the server sent (a DELETED event's object
    too, as it was): the store reads them itself. What is not a JSON object is skipped."""

    def __init__(self, kind: str) -> None:
        self._kind = kind

    def page(self, raw: bytes) -> Page[Mapping[str, Any]]:
        listing = json.loads(raw)
        items = [i for i in listing.get("items") or [] if isinstance(i, Mapping)]
        meta = listing.get("metadata") or {}
        version, token = str(meta.get("resourceVersion") or ""), str(meta.get("continue") or "")
        return Page([(raw_key(i), i) for i in items], version, token or None)

    def change(self, line: bytes) -> Change[Mapping[str, Any]]:
        kind, obj = watch_event(line, self._kind)
        if not isinstance(obj, Mapping):
            return Change(kind, None, None, "")
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        return Change(kind, None if kind == "BOOKMARK" else raw_key(obj), obj, version)


class _Handing:
    """The Reflector's store: hands listings and changes on to the ListWatch's `Store` until `stop`."""

    def __init__(self, store: Store, stop: threading.Event) -> None:
        self._store, self._stop = store, stop

    def replace(self, objects: list[tuple[Key, Mapping[str, Any]]]) -> None:
        if self._stop.is_set():
            raise _Stopped
        self._store.replace([obj for _key, obj in objects])

    def change(self, change: Change[Mapping[str, Any]]) -> None:
        if self._stop.is_set():
            raise _Stopped
        if change.obj is not None:
            self._store.change(change.obj, change.type == "DELETED")


class ListWatch:
    def __init__(
        self,
        kind: str,
        lister: Callable[..., Any],
        store: Store,
        *,
        stop: threading.Event,
        metrics: RelayMetrics,
        timings: WatchTimings | None = None,
    ) -> None:
        self.kind, self.lister, self.store = kind, lister, store
        self.stop, self.metrics = stop, metrics
        self.timings = timings or WatchTimings()
        self.synced = threading.Event()
        self.absent = False
        self._response: Any = None
        self._reflector = Reflector(
            _JsonDecoder(kind),
            _Handing(store, stop),
            list_page=self._list_page,
            open_watch=self._open_watch,
        )

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=f"watch-{self.kind}", daemon=True)
        thread.start()
        return thread

    def interrupt(self) -> None:
        """Close the open watch so the thread sees `stop` now, not at the next event."""
        response = self._response
        if response is None:
            return
        try:
            # The thread blocks in the socket's read, holding the buffer that close() must take:
            # shut the socket first so that read returns, as the kubernetes client's Watch.stop does.
            sock = getattr(getattr(response, "connection", None), "sock", None)
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
            response.close()
        except Exception:  # closing a stream another thread reads may race; it ends anyway
            log.debug("closing the %s watch raced", self.kind)

    def run(self) -> None:
        failures = 0
        while not self.stop.is_set():
            try:
                self._reflector.relist()
                self.synced.set()
                failures = 0
                while not self.stop.is_set():
                    self._reflector.follow()
            except _Stopped:
                return
            except Expired:
                self.metrics.watch_restarts.labels(self.kind, "gone").inc()
            except (client.exceptions.ApiException, WatchError) as exc:
                if exc.status == 404:
                    self.absent = True
                    self.synced.set()
                    log.info("%s: no such resource in this cluster; not watched", self.kind)
                    return
                failures += 1
                self._pause_after(f"HTTP {exc.status}", failures)
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:  # the network or a bad body
                if self.stop.is_set():
                    return
                failures += 1
                self._pause_after(type(exc).__name__, failures)
            except Exception:  # not an API or network failure: a bug (the store's too); log it in full
                if self.stop.is_set():
                    return
                log.exception("%s watch broke unexpectedly", self.kind)
                failures += 1
                self._pause_after("unexpected error", failures)

    def _pause_after(self, reason: str, failures: int) -> None:
        self.metrics.watch_restarts.labels(self.kind, "error").inc()
        cap = min(self.timings.max_backoff, self.timings.first_backoff * 2 ** (failures - 1))
        pause = random.uniform(cap / 2, cap)
        log.warning("%s watch failed (%s); re-listing in %.1f s", self.kind, reason, pause)
        self.stop.wait(pause)

    # ---- the Reflector's requests, through the kubernetes client's lister ---------------------
    def _list_page(self, token: str | None) -> bytes:
        more = {"_continue": token} if token else {}
        return bytes(self.lister(_preload_content=False, **more).data)

    def _open_watch(self, resource_version: str) -> Iterator[bytes]:
        try:
            response = self.lister(
                watch=True,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=self.timings.watch_seconds,
                _preload_content=False,
            )
        except client.exceptions.ApiException as exc:
            if exc.status == 410:
                raise Expired(str(exc.reason)) from exc
            raise
        self._response = response
        return stream_lines(response)
