"""The API's write rules over `ObjectStorage`: create, update, patch, delete.

Creation stamps metadata and validates; updates enforce optimistic concurrency and the
status-subresource split. Deletion follows upstream: finalizers hold an object
(deletionTimestamp set) until an update empties them; removing an object garbage-collects
its dependents (ownerReferences, background by default, Orphan and Foreground honoured); a
terminating namespace goes once it is empty.

Must not: parse HTTP or know about discovery; stored dicts are never mutated in place.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.admission import admit, schema_for
from gpupool.sandbox.kubeapi.apply import record_update
from gpupool.sandbox.kubeapi.clock import rfc3339
from gpupool.sandbox.kubeapi.objects import metadata, prepare_create, prepare_update, same_content, spec_of
from gpupool.sandbox.kubeapi.query import WriteOptions
from gpupool.sandbox.kubeapi.resources import ResourceType
from gpupool.sandbox.kubeapi.storage import NAMESPACES, Entry, ObjectStorage, WatchEvent
from gpupool.sandbox.kubeapi.validation import validate

JsonObject = dict[str, Any]
__all__ = ["Entry", "Store", "WatchEvent"]


class Store(ObjectStorage):
    """Storage plus the API's rules for writes and deletion."""

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
    ) -> JsonObject:
        """Decode, default and validate; then credit the changed fields to the request's manager."""
        admitted = admit(
            rt, obj, old, options, self.allocate_cluster_ip, enforce_schemas=self.enforce_schemas
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
            updated = self._admit(rt, prepared, None if trusted else current, current, options)
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
