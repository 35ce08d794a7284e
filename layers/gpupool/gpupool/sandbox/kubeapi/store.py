"""The embedded API server's object store: storage, resourceVersions, watch history, write rules.

Role: objects are stored per (group, plural) then namespace then name, so a namespaced list only
touches its namespace. Every write takes the next global resourceVersion and appends exactly one
watch event, so the history is indexed by resourceVersion; each stored object keeps its JSON
encoding once computed, so lists and watches do not re-encode unchanged objects. Over that, the
API's write rules: creation stamps metadata and validates; updates enforce optimistic
concurrency and the status-subresource split. Deletion follows upstream: finalizers hold an
object (deletionTimestamp set) until an update empties them; removing an object garbage-collects
its dependents (ownerReferences, background by default, Orphan and Foreground honoured); a
terminating namespace goes once it is empty.

Pods are also indexed by `spec.nodeName` ("" for unbound), as kube-apiserver's watch cache indexes
them (the pod registry's `IndexFields: spec.nodeName`), so a list selecting one node's pods reads
that node's, not every pod (`pods_on_node`).

One class on purpose: the indexes (by uid, by owner, pods by node) and the write and deletion rules
keep one invariant together, under one lock.

Must not: parse HTTP or know about discovery; stored dicts are never mutated in place.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.admission import admit, schema_for
from gpupool.sandbox.kubeapi.apply import record_update
from gpupool.sandbox.kubeapi.clock import Clock, rfc3339
from gpupool.sandbox.kubeapi.objects import metadata, prepare_create, prepare_update, same_content, spec_of
from gpupool.sandbox.kubeapi.query import WriteOptions
from gpupool.sandbox.kubeapi.resources import BUILTIN_TYPES, ResourceType
from gpupool.sandbox.kubeapi.validation import validate

JsonObject = dict[str, Any]
StorageKey = tuple[str, str]
NAMESPACES = next(rt for rt in BUILTIN_TYPES if rt.plural == "namespaces")
_PODS: StorageKey = ("", "pods")
__all__ = ["Entry", "Store", "WatchEvent"]


class Entry:
    """A stored object and its JSON encoding, computed once and reused by lists and watches."""

    __slots__ = ("_encoded", "_encoded_item", "key", "labels", "obj")

    def __init__(self, obj: JsonObject) -> None:
        self.obj = obj
        meta = metadata(obj)
        self.labels: dict[str, str] = meta.get("labels") or {}  # selectors read these often
        self.key: tuple[str, str] = (
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )  # list order
        self._encoded: bytes | None = None
        self._encoded_item: bytes | None = None

    @property
    def encoded(self) -> bytes:
        if self._encoded is None:
            self._encoded = json.dumps(self.obj, separators=(",", ":")).encode()
        return self._encoded

    @property
    def encoded_item(self) -> bytes:
        """The encoding as an item of a built-in kind's list: upstream's typed lists leave each
        item's kind and apiVersion out (custom resource lists keep them)."""
        if self._encoded_item is None:
            bare = {k: v for k, v in self.obj.items() if k not in ("kind", "apiVersion")}
            self._encoded_item = json.dumps(bare, separators=(",", ":")).encode()
        return self._encoded_item


# Built-in registries whose strategies refuse an update without a resourceVersion (upstream's
# AllowUnconditionalUpdate false); custom resources refuse it too.
_CONDITIONAL_UPDATES = frozenset(
    {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("coordination.k8s.io", "leases"),
        ("coordination.k8s.io", "leasecandidates"),
        ("node.k8s.io", "runtimeclasses"),
        ("policy", "poddisruptionbudgets"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("storage.k8s.io", "volumeattachments"),
    }
)


def allows_unconditional_update(rt: ResourceType) -> bool:
    """Whether a PUT without a resourceVersion overwrites (else it is 422, as upstream)."""
    return rt.builtin and (rt.group, rt.plural) not in _CONDITIONAL_UPDATES


@dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    type: str  # ADDED, MODIFIED, DELETED
    key: StorageKey
    namespace: str
    entry: Entry
    previous: JsonObject | None


class Store:
    """Thread-safe storage and the API's rules for writes and deletion; `changed` is notified
    after every write (watchers wait on it)."""

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
        self._pods_by_node: dict[str, dict[tuple[str, str], Entry]] = {}
        self._pod_nodes: dict[tuple[str, str], str] = {}
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

    def pods_on_node(self, node_name: str, namespace: str | None) -> tuple[list[Entry], int]:
        """The pods whose `spec.nodeName` is `node_name` ("" for unbound; in one namespace, or all)
        in key order, and the list's resourceVersion."""
        with self.lock:
            found = self._pods_by_node.get(node_name, {})
            keys = sorted(k for k in found if namespace is None or k[0] == namespace)
            return [found[k] for k in keys], self._rv

    def _index_pod(self, key: tuple[str, str], entry: Entry | None) -> None:
        """Index the pod stored under `key` by its node (`entry` None: it is gone)."""
        was = self._pod_nodes.pop(key, None)
        if was is not None:
            self._pods_by_node[was].pop(key, None)
        if entry is not None:
            node = str((entry.obj.get("spec") or {}).get("nodeName") or "")
            self._pod_nodes[key] = node
            self._pods_by_node.setdefault(node, {})[key] = entry

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

    # ----- writing -------------------------------------------------------------------------
    def create(
        self, rt: ResourceType, namespace: str | None, body: JsonObject, options: WriteOptions | None = None
    ) -> JsonObject:
        """Store a new object; with `options.dry_run` return what would be stored, storing nothing."""
        options = options or WriteOptions()
        with self.lock:
            if rt.namespaced:
                assert namespace is not None
                self._check_namespace_accepts(namespace)
            obj = self._admit(rt, prepare_create(rt, body, namespace, self.clock.now()), None, None, options)
            validate(rt, obj)
            meta = metadata(obj)
            ns = str(meta.get("namespace") or "")
            if meta["name"] in self._objects.get(rt.storage_key, {}).get(ns, {}):
                raise errors.already_exists(rt.group, rt.plural, meta["name"])
            if options.dry_run:
                return obj
            return self._write(rt, ns, obj, "ADDED", None).obj

    def _admit(
        self,
        rt: ResourceType,
        obj: JsonObject,
        old: JsonObject | None,
        previous: JsonObject | None,
        options: WriteOptions,
        *,
        status_write: bool = False,
    ) -> JsonObject:
        """Decode, default and validate; then credit the changed fields to the request's manager."""
        admitted = admit(
            rt,
            obj,
            old,
            options,
            self.allocate_cluster_ip,
            enforce_schemas=self.enforce_schemas,
            status_write=status_write,
        )
        if options.field_manager:
            now = rfc3339(self.clock.now())
            record_update(previous, admitted, schema_for(rt), manager=options.field_manager, now=now)
        return admitted

    def _check_namespace_accepts(self, namespace: str) -> None:
        found = self._objects.get(NAMESPACES.storage_key, {}).get("", {}).get(namespace)
        if found is None:
            raise errors.not_found("", "namespaces", namespace)
        if metadata(found.obj).get("deletionTimestamp"):
            raise errors.ApiError(
                403,
                "Forbidden",
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: JsonObject,
        *,
        status_only: bool,
        options: WriteOptions | None = None,
    ) -> JsonObject:
        """PUT semantics: a resourceVersion in the body must be the stored one (else 409)."""
        body_name = metadata(body).get("name")
        if body_name not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        if metadata(body).get("resourceVersion") in (None, "", "0") and not allows_unconditional_update(rt):
            # Upstream names the resource (plural) where the kind would go, as its TODO admits.
            raise errors.invalid(
                rt.plural,
                rt.group,
                name,
                [("metadata.resourceVersion", "Invalid value: 0: must be specified for an update")],
            )
        return self.mutate(
            rt, namespace, name, lambda _current: body, status_only=status_only, options=options
        )

    def mutate(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        change: Callable[[JsonObject], JsonObject],
        *,
        status_only: bool,
        trusted: bool = False,
        options: WriteOptions | None = None,
    ) -> JsonObject:
        """Apply `change` to a copy of the stored object under the lock (update and patch).

        `trusted` skips update-only rules (pod spec immutability) for server-side writers
        such as `pods/binding`.
        """
        options = options or WriteOptions()
        with self.lock:
            entry = self._entry(rt, namespace, name)
            current = entry.obj
            candidate = change(copy.deepcopy(current))
            wanted_rv = metadata(candidate).get("resourceVersion")
            if wanted_rv not in (None, "") and str(wanted_rv) != metadata(current)["resourceVersion"]:
                raise errors.conflict(rt.group, rt.plural, name)
            prepared = prepare_update(rt, current, candidate, status_only=status_only)
            updated = self._admit(
                rt, prepared, None if trusted else current, current, options, status_write=status_only
            )
            if rt.tracks_generation and spec_of(updated) == spec_of(current):
                # Defaults can make a changed request store the same spec: nothing to observe.
                metadata(updated)["generation"] = metadata(current).get("generation")
            validate(rt, updated, None if trusted else current)
            updated_meta = metadata(updated)
            if options.dry_run:
                updated_meta["resourceVersion"] = metadata(current)["resourceVersion"]
                return updated
            if updated_meta.get("deletionTimestamp") and not updated_meta.get("finalizers"):
                return self._remove(rt, namespace, name, final=updated)
            if same_content(updated, current):
                return current
            return self._write(rt, namespace, updated, "MODIFIED", current).obj

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        propagation: str = "Background",
        uid: str | None = None,
        dry_run: bool = False,
    ) -> JsonObject:
        """Delete now, or mark deleting while finalizers remain; returns the last state.
        With `dry_run`, checks the request and returns the object as it stands."""
        with self.lock:
            current = self._entry(rt, namespace, name).obj
            meta = metadata(current)
            if uid is not None and uid != meta["uid"]:
                raise errors.conflict(rt.group, rt.plural, name)
            if dry_run:
                return current
            if propagation == "Orphan":
                self._orphan_dependents(str(meta["uid"]))
            elif propagation == "Foreground":
                self._collect_dependents(str(meta["uid"]))
            if rt.storage_key == NAMESPACES.storage_key:
                return self._delete_namespace(name)
            if meta.get("finalizers"):
                return self._mark_deleting(rt, namespace, current)
            return self._remove(rt, namespace, name)

    # ----- deletion --------------------------------------------------------------------------
    def _mark_deleting(self, rt: ResourceType, namespace: str, current: JsonObject) -> JsonObject:
        if metadata(current).get("deletionTimestamp"):
            return current
        marked = copy.deepcopy(current)
        metadata(marked)["deletionTimestamp"] = rfc3339(self.clock.now())
        metadata(marked)["deletionGracePeriodSeconds"] = 0
        return self._write(rt, namespace, marked, "MODIFIED", current).obj

    def _after_remove(self, rt: ResourceType, namespace: str, gone: JsonObject) -> None:
        """Under the lock after each removal: removal hooks, garbage collection, namespace end."""
        for hook in self.removal_hooks:
            hook(rt, gone)
        self._collect_dependents(str(metadata(gone)["uid"]))
        if namespace and namespace not in self._objects.get(rt.storage_key, {}):
            self._finish_namespace_if_empty(namespace)

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background garbage collection: dependents with no owner left are deleted."""
        for dependent_uid in sorted(self._dependents.pop(owner_uid, set())):
            located = self._located(dependent_uid)
            if located is None:
                continue
            rt, namespace, dependent = located
            refs = metadata(dependent).get("ownerReferences") or []
            remaining = [ref for ref in refs if ref.get("uid") != owner_uid]
            if any(ref.get("uid") in self._by_uid for ref in remaining):
                self._set_owner_references(rt, namespace, dependent, remaining)
            else:
                self.delete(rt, namespace, str(metadata(dependent)["name"]))

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dependent_uid in sorted(self._dependents.pop(owner_uid, set())):
            located = self._located(dependent_uid)
            if located is not None:
                rt, namespace, dependent = located
                refs = metadata(dependent).get("ownerReferences") or []
                self._set_owner_references(
                    rt, namespace, dependent, [r for r in refs if r.get("uid") != owner_uid]
                )

    def _set_owner_references(
        self, rt: ResourceType, namespace: str, obj: JsonObject, refs: list[Any]
    ) -> None:
        updated = copy.deepcopy(obj)
        if refs:
            metadata(updated)["ownerReferences"] = refs
        else:
            metadata(updated).pop("ownerReferences", None)
        self._write(rt, namespace, updated, "MODIFIED", obj)

    def _namespaced_entries(self, namespace: str) -> Iterable[tuple[ResourceType, str]]:
        for key, by_namespace in list(self._objects.items()):
            for name in list(by_namespace.get(namespace, {})):
                yield self._types[key], name

    def _delete_namespace(self, name: str) -> JsonObject:
        current = self._entry(NAMESPACES, "", name).obj
        if not metadata(current).get("deletionTimestamp"):
            marked = copy.deepcopy(current)
            metadata(marked)["deletionTimestamp"] = rfc3339(self.clock.now())
            marked.setdefault("status", {})["phase"] = "Terminating"
            current = self._write(NAMESPACES, "", marked, "MODIFIED", current).obj
        for rt, object_name in list(self._namespaced_entries(name)):
            if object_name in self._objects.get(rt.storage_key, {}).get(name, {}):
                self.delete(rt, name, object_name)
        return self._finish_namespace_if_empty(name) or current

    def _finish_namespace_if_empty(self, name: str) -> JsonObject | None:
        entry = self._objects.get(NAMESPACES.storage_key, {}).get("", {}).get(name)
        if (
            entry is None
            or not metadata(entry.obj).get("deletionTimestamp")
            or metadata(entry.obj).get("finalizers")
        ):
            return None
        if any(name in by_namespace for by_namespace in self._objects.values()):
            return None
        return self._remove(NAMESPACES, "", name)

    def drop_resource(self, rt: ResourceType) -> None:
        """Remove every object of a resource whose CRD went away (DELETED events are sent)."""
        with self.lock:
            for namespace, by_name in list(self._objects.get(rt.storage_key, {}).items()):
                for name in list(by_name):
                    self._remove(rt, namespace, name)

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
        if rt.storage_key == _PODS:
            self._index_pod(entry.key, entry)
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
        if rt.storage_key == _PODS:
            self._index_pod(entry.key, None)
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
