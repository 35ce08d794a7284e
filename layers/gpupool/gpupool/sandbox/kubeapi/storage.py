"""Object storage: one global resourceVersion, per-resource/namespace indexes, watch history.

Objects are stored per (group, plural) then namespace then name, so a namespaced list only
touches its namespace. Every write takes the next global resourceVersion and appends exactly
one watch event, so the history is indexed by resourceVersion. Each stored object keeps its
JSON encoding once computed, so lists and watches do not re-encode unchanged objects.

Must not: apply API rules (validation, finalizers, garbage collection: see `store`), parse
HTTP, or mutate a stored dict in place.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.clock import Clock
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.resources import BUILTIN_TYPES, ResourceType

JsonObject = dict[str, Any]
StorageKey = tuple[str, str]
NAMESPACES = next(rt for rt in BUILTIN_TYPES if rt.plural == "namespaces")


class Entry:
    """A stored object and its JSON encoding, computed once and reused by lists and watches."""

    __slots__ = ("_encoded", "key", "labels", "obj")

    def __init__(self, obj: JsonObject) -> None:
        self.obj = obj
        meta = metadata(obj)
        self.labels: dict[str, str] = meta.get("labels") or {}  # selectors read these often
        self.key: tuple[str, str] = (
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )  # list order
        self._encoded: bytes | None = None

    @property
    def encoded(self) -> bytes:
        if self._encoded is None:
            self._encoded = json.dumps(self.obj, separators=(",", ":")).encode()
        return self._encoded


@dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    type: str  # ADDED, MODIFIED, DELETED
    key: StorageKey
    namespace: str
    entry: Entry
    previous: JsonObject | None


class ObjectStorage:
    """Thread-safe storage; `changed` is notified after every write (watchers wait on it)."""

    def __init__(self, clock: Clock, *, history: int = 200_000) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.closed = False
        self.enforce_schemas = True
        self.removal_hooks: list[Callable[[ResourceType, JsonObject], None]] = []
        self._history = history
        self._rv = 0
        self._objects: dict[StorageKey, dict[str, dict[str, Entry]]] = {}
        self._types: dict[StorageKey, ResourceType] = {}
        self._by_uid: dict[str, tuple[StorageKey, str, str]] = {}
        self._dependents: dict[str, set[str]] = {}
        self._events: list[WatchEvent] = []
        # (resource, namespace or None) → its entries sorted by key, until a write there.
        self._sorted: dict[tuple[StorageKey, str | None], list[Entry]] = {}
        self._next_cluster_ip = 1  # Services get 10.96.0.1 (the `kubernetes` Service's) and up

    def allocate_cluster_ip(self) -> str:
        """The next free address of the sandbox's service range, 10.96.0.0/12."""
        with self.lock:
            self._next_cluster_ip += 1
            offset = self._next_cluster_ip
        return f"10.{96 + (offset >> 16)}.{(offset >> 8) & 255}.{offset & 255}"

    # ----- reading -------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def get(self, rt: ResourceType, namespace: str, name: str) -> JsonObject:
        with self.lock:
            return self._entry(rt, namespace, name).obj

    def _entry(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        entry = self._objects.get(rt.storage_key, {}).get(namespace, {}).get(name)
        if entry is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return entry

    def entries(self, rt: ResourceType, namespace: str | None) -> tuple[list[Entry], int]:
        """All entries of a resource (in one namespace, or all); the list's resourceVersion."""
        with self.lock:
            by_namespace = self._objects.get(rt.storage_key, {})
            if namespace is not None:
                return list(by_namespace.get(namespace, {}).values()), self._rv
            found: list[Entry] = []
            for namespace_key in sorted(by_namespace):
                found.extend(by_namespace[namespace_key].values())
            return found, self._rv

    def sorted_entries(self, rt: ResourceType, namespace: str | None) -> tuple[list[Entry], int]:
        """`entries` in key order (namespace, name); kept until the resource is written again.
        The list returned is shared: callers must not change it."""
        with self.lock:
            cache_key = (rt.storage_key, namespace)
            found = self._sorted.get(cache_key)
            if found is None:
                found = sorted(self.entries(rt, namespace)[0], key=_entry_key)
                self._sorted[cache_key] = found
            return found, self._rv

    def _forget_order(self, key: StorageKey, namespace: str) -> None:
        self._sorted.pop((key, namespace), None)
        self._sorted.pop((key, None), None)

    def events_after(self, resource_version: int) -> list[WatchEvent] | None:
        """Events newer than `resource_version`, or None when history no longer reaches it."""
        if not self._events:
            return [] if resource_version >= self._rv else None
        first = self._events[0].resource_version
        if resource_version < first - 1:
            return None
        return self._events[resource_version - first + 1 :]

    def exists(self, rt: ResourceType, namespace: str, name: str) -> bool:
        with self.lock:
            return name in self._objects.get(rt.storage_key, {}).get(namespace, {})

    def namespace_exists(self, name: str) -> bool:
        with self.lock:
            return name in self._objects.get(NAMESPACES.storage_key, {}).get("", {})

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    # ----- internals -----------------------------------------------------------------------
    def _write(
        self, rt: ResourceType, namespace: str, obj: JsonObject, kind: str, previous: JsonObject | None
    ) -> Entry:
        self._rv += 1
        metadata(obj)["resourceVersion"] = str(self._rv)
        entry = Entry(obj)
        name = str(metadata(obj)["name"])
        self._types.setdefault(rt.storage_key, rt)
        self._objects.setdefault(rt.storage_key, {}).setdefault(namespace, {})[name] = entry
        self._forget_order(rt.storage_key, namespace)
        uid = str(metadata(obj)["uid"])
        self._by_uid[uid] = (rt.storage_key, namespace, name)
        old_owners = owner_uids(previous) if previous is not None else set()
        for owner in owner_uids(obj) - old_owners:
            self._dependents.setdefault(owner, set()).add(uid)
        for owner in old_owners - owner_uids(obj):
            self._dependents.get(owner, set()).discard(uid)
        self._record(WatchEvent(self._rv, kind, rt.storage_key, namespace, entry, previous))
        return entry

    def _record(self, event: WatchEvent) -> None:
        self._events.append(event)
        if len(self._events) > 2 * self._history:
            del self._events[: self._history]
        self.changed.notify_all()

    def _remove(
        self, rt: ResourceType, namespace: str, name: str, final: JsonObject | None = None
    ) -> JsonObject:
        """Remove an object; `final` is its last state when an update is what removes it."""
        by_namespace = self._objects[rt.storage_key]
        entry = by_namespace[namespace].pop(name)
        self._forget_order(rt.storage_key, namespace)
        if not by_namespace[namespace]:
            del by_namespace[namespace]
        self._rv += 1
        gone = copy.deepcopy(final if final is not None else entry.obj)
        metadata(gone)["resourceVersion"] = str(self._rv)
        uid = str(metadata(gone)["uid"])
        self._by_uid.pop(uid, None)
        for owner in owner_uids(gone):
            self._dependents.get(owner, set()).discard(uid)
        self._record(WatchEvent(self._rv, "DELETED", rt.storage_key, namespace, Entry(gone), entry.obj))
        self._after_remove(rt, namespace, gone)
        return gone

    def _after_remove(self, rt: ResourceType, namespace: str, gone: JsonObject) -> None:
        """Called under the lock after each removal (the store collects garbage here)."""

    def _located(self, uid: str) -> tuple[ResourceType, str, JsonObject] | None:
        where = self._by_uid.get(uid)
        if where is None:
            return None
        key, namespace, name = where
        return self._types[key], namespace, self._objects[key][namespace][name].obj


def _entry_key(entry: Entry) -> tuple[str, str]:
    return entry.key


def owner_uids(obj: JsonObject) -> set[str]:
    refs = metadata(obj).get("ownerReferences") or []
    return {str(ref["uid"]) for ref in refs if isinstance(ref, dict) and ref.get("uid")}
