"""List, then watch from the list's resourceVersion, the way client-go's reflector does.

Role: `ListWatch.run()` (one thread per resource) lists once and hands the whole listing to its
`Store` (`replace`: the store reports what vanished since its last listing as deleted, so a
re-list misses nothing), reports it synced, then watches from the newest resourceVersion it knows
(bookmarks included: `allowWatchBookmarks`), resuming after each watch timeout, and hands each
change to the store (`change`). A `410 Gone` (history compacted) re-lists. Any other error —
the store's included — backs off (capped exponential with jitter) and re-lists. Restarts are
counted by reason. A kind whose resource does not exist (404: Karpenter's CRD absent) is
reported synced and idle.

Must not: interpret or keep objects (the store does: `informers.SharedInformer`).
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3
from kubernetes import client as _client
from kubernetes import watch as _watch

from gpupool_incluster.relay.metrics import RelayMetrics

__all__ = ["ListWatch", "Store", "WatchTimings"]

log = logging.getLogger("gpupool.relay.watch")
client: Any = _client
watch: Any = _watch


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


class _Gone(Exception):
    pass


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
        self._version = ""
        self._watch: Any = None

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=f"watch-{self.kind}", daemon=True)
        thread.start()
        return thread

    def interrupt(self) -> None:
        """Close the open watch so the thread sees `stop` now, not at the next event."""
        current = self._watch
        if current is not None:
            current.stop()
            response = getattr(current, "_resp", None)
            if response is not None:
                try:
                    response.close()
                except Exception:  # closing a stream another thread reads may race; it ends anyway
                    log.debug("closing the %s watch raced", self.kind)

    def run(self) -> None:
        failures = 0
        while not self.stop.is_set():
            try:
                self._list()
                failures = 0
                while not self.stop.is_set():
                    self._watch_once()
            except _Gone:
                self.metrics.watch_restarts.labels(self.kind, "gone").inc()
            except client.exceptions.ApiException as exc:
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

    def _list(self) -> None:
        response = self.lister(_preload_content=False)
        listing = json.loads(response.data)
        items = [i for i in listing.get("items") or [] if isinstance(i, Mapping)]
        if self.stop.is_set():
            return
        self.store.replace(items)
        self._version = str((listing.get("metadata") or {}).get("resourceVersion") or "")
        self.synced.set()

    def _watch_once(self) -> None:
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self.lister,
            resource_version=self._version,
            allow_watch_bookmarks=True,
            timeout_seconds=self.timings.watch_seconds,
        )
        try:
            for event in stream:
                if self.stop.is_set():
                    return
                self._apply(event)
        except client.exceptions.ApiException as exc:
            if exc.status == 410:
                raise _Gone from exc
            raise
        finally:
            self._watch = None

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("raw_object")
        if not isinstance(obj, Mapping):
            return
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Gone
            raise RuntimeError(f"watch error: {obj.get('message')}")
        if version:
            self._version = str(version)
        if kind == "BOOKMARK":
            return
        self.store.change(obj, kind == "DELETED")
