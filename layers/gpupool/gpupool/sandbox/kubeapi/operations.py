"""The API operations behind the HTTP routes: CRUD, lists, patches, CRDs, binding, eviction.

`ApiOperations` owns the store and the registry. Creating, updating or deleting a
CustomResourceDefinition installs or removes the resources it serves (and their objects);
the pod subresources are delegated to `pods`. The system namespaces cannot be deleted.

Must not: parse HTTP; the handler turns requests into these calls.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gpupool.sandbox.kubeapi import errors, listing, pods
from gpupool.sandbox.kubeapi.admission import schema_for
from gpupool.sandbox.kubeapi.apply import server_side_apply
from gpupool.sandbox.kubeapi.clock import Clock, rfc3339
from gpupool.sandbox.kubeapi.crd import established_status, resource_types, validate_crd
from gpupool.sandbox.kubeapi.objects import check_type, metadata
from gpupool.sandbox.kubeapi.patch import patcher
from gpupool.sandbox.kubeapi.query import WriteOptions
from gpupool.sandbox.kubeapi.registry import Registry
from gpupool.sandbox.kubeapi.resources import BUILTIN_TYPES, ResourceType
from gpupool.sandbox.kubeapi.selectors import FieldSelector, LabelSelector
from gpupool.sandbox.kubeapi.store import Entry, Store

JsonObject = dict[str, Any]
CRDS = next(rt for rt in BUILTIN_TYPES if rt.plural == "customresourcedefinitions")
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})  # upstream's NamespaceLifecycle


class ApiOperations:
    def __init__(self, clock: Clock, *, watch_history: int = 200_000, enforce_schemas: bool = True) -> None:
        self.clock = clock
        self.store = Store(clock, history=watch_history)
        self.store.enforce_schemas = enforce_schemas
        self.registry = Registry()
        # How long a request naming a future resourceVersion waits for it (upstream: 3 s).
        self.too_large_wait_seconds = 3.0
        self.store.removal_hooks.append(self._on_removed)
        namespaces = next(rt for rt in BUILTIN_TYPES if rt.plural == "namespaces")
        for name in INITIAL_NAMESPACES:
            self.store.create(namespaces, None, {"metadata": {"name": name}, "status": {"phase": "Active"}})

    def resolve(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.registry.lookup(group, version, plural)
        if rt is None:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        return rt

    # ----- reads ---------------------------------------------------------------------------
    def matching_entries(
        self, rt: ResourceType, namespace: str | None, labels: LabelSelector, fields: FieldSelector
    ) -> tuple[list[Entry], int]:
        entries, resource_version = self._candidates(rt, namespace, fields, ordered=False)
        if labels.requirements:
            matches = labels.matches
            entries = [e for e in entries if matches(e.labels)]
        if fields.terms:
            entries = [e for e in entries if fields.matches(e.obj)]
        return entries, resource_version

    def _candidates(
        self, rt: ResourceType, namespace: str | None, fields: FieldSelector, *, ordered: bool
    ) -> tuple[list[Entry], int]:
        """The entries a list must look at: one node's pods when the selector pins `spec.nodeName`
        (the store's index, in key order), else every entry of the resource."""
        node = fields.required_value("spec.nodeName") if rt.storage_key == ("", "pods") else None
        if node is not None:
            return self.store.pods_on_node(node, namespace)
        if ordered:
            return self.store.sorted_entries(rt, namespace)
        return self.store.entries(rt, namespace)

    def list_page(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        limit: int = 0,
        continue_token: str = "",
    ) -> tuple[list[Entry], JsonObject, int]:
        """One page of the matching entries in key order, its list-metadata additions, the list's
        resourceVersion (`listing.select_page` on the store's sorted entries)."""
        entries, resource_version = self._candidates(rt, namespace, fields, ordered=True)
        matches = None
        if labels.requirements or fields.terms:

            def matches(entry: Entry) -> bool:
                return labels.matches(entry.labels) and (not fields.terms or fields.matches(entry.obj))

        page, extra = listing.select_page(entries, matches, limit=limit, continue_token=continue_token)
        return page, extra, resource_version

    def list_body(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        limit: int = 0,
        continue_token: str = "",
    ) -> bytes:
        page, extra, resource_version = self.list_page(
            rt, namespace, labels, fields, limit=limit, continue_token=continue_token
        )
        return listing.list_body(
            rt, page, resource_version, lambda entry: self.encode(rt, entry), extra_metadata=extra
        )

    def check_list_version(self, resource_version: str, match: str, *, limit: int = 0) -> int:
        """A list at a future resourceVersion waits briefly, then 504; Exact needs the current one
        (a paged list naming a version without a match is Exact, as upstream); returns the page
        size to serve (`listing.served_limit`: none for resourceVersion=0)."""
        listing.wait_for_version(self.store, resource_version, self.too_large_wait_seconds)
        listing.check_exact(
            self.store, resource_version, listing.effective_match(resource_version, match, limit)
        )
        return listing.served_limit(resource_version, limit)

    def check_watch_start(self, resource_version: str) -> None:
        """A watch from a future resourceVersion waits briefly, then 504 Too large resource version."""
        listing.wait_for_version(self.store, resource_version, self.too_large_wait_seconds)

    def encode(self, rt: ResourceType, entry: Entry) -> bytes:
        """The object as `rt`'s version serves it (custom resources may have several versions)."""
        if entry.obj.get("apiVersion") == rt.api_version:
            return entry.encoded
        return json.dumps({**entry.obj, "apiVersion": rt.api_version}, separators=(",", ":")).encode()

    def get(self, rt: ResourceType, namespace: str, name: str) -> JsonObject:
        found = self.store.get(rt, namespace, name)
        return found if found.get("apiVersion") == rt.api_version else {**found, "apiVersion": rt.api_version}

    # ----- writes --------------------------------------------------------------------------
    def create(
        self, rt: ResourceType, namespace: str | None, body: Any, *, options: WriteOptions | None = None
    ) -> JsonObject:
        body = check_type(rt, body)
        if rt is CRDS:
            validate_crd(body)
        created = self.store.create(rt, namespace, body, options)
        if rt is CRDS and not (options and options.dry_run):
            self.registry.install(metadata(created)["name"], resource_types(created))
            status = established_status(created, rfc3339(self.clock.now()))
            return self.store.mutate(
                rt, "", metadata(created)["name"], lambda c: {**c, "status": status}, status_only=True
            )
        return created

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str | None,
        options: WriteOptions | None = None,
    ) -> JsonObject:
        body = check_type(rt, body)
        if rt is CRDS and subresource is None:
            validate_crd(body)
        updated = self.store.update(
            rt, namespace, name, body, status_only=subresource == "status", options=options
        )
        if not (options and options.dry_run):
            self._after_crd_write(rt, updated)
        return updated

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        content_type: str,
        *,
        subresource: str | None,
        options: WriteOptions | None = None,
    ) -> JsonObject:
        accepted = errors.BUILTIN_PATCH_TYPES if rt.builtin else errors.CUSTOM_PATCH_TYPES
        if content_type not in accepted:
            raise errors.unsupported_media_type(accepted)
        apply = patcher(content_type, patch, schema_for(rt))

        def checked(current: JsonObject) -> JsonObject:
            patched = apply(current)
            check_type(rt, patched)
            if rt is CRDS and subresource is None:
                validate_crd(patched)
            return patched

        updated = self.store.mutate(
            rt, namespace, name, checked, status_only=subresource == "status", options=options
        )
        if not (options and options.dry_run):
            self._after_crd_write(rt, updated)
        return updated

    def apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str | None,
        options: WriteOptions | None = None,
    ) -> tuple[JsonObject, bool]:
        """Server-side apply; returns the object and whether the apply created it."""
        options = options or WriteOptions()
        body = check_type(rt, body)
        body_name = metadata(body).get("name")
        if body_name not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        store_options = dataclasses.replace(options, field_manager="")
        now = rfc3339(self.clock.now())

        def applied_to(live: JsonObject | None) -> JsonObject:
            return server_side_apply(
                live,
                body,
                schema_for(rt),
                manager=options.field_manager,
                force=options.force,
                now=now,
                kind=rt.plural,
                name=name,
            )

        with self.store.lock:
            if self.store.exists(rt, namespace, name):
                updated = self.store.mutate(
                    rt,
                    namespace,
                    name,
                    applied_to,
                    status_only=subresource == "status",
                    options=store_options,
                )
                if not options.dry_run:
                    self._after_crd_write(rt, updated)
                return updated, False
            if subresource is not None:
                raise errors.not_found(rt.group, rt.plural, name)
            created = applied_to(None)
            created.setdefault("metadata", {})["name"] = name
            return self.create(rt, namespace if rt.namespaced else None, created, options=store_options), True

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        delete_options: JsonObject,
        *,
        options: WriteOptions | None = None,
    ) -> tuple[JsonObject, bool]:
        """Delete; returns the last state and whether the object is gone already."""
        dry_run = bool(options and options.dry_run) or delete_options.get("dryRun") == ["All"]
        if rt.group == "" and rt.plural == "namespaces" and name in PROTECTED_NAMESPACES:
            raise errors.ApiError(
                403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
        propagation = str(delete_options.get("propagationPolicy") or "Background")
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise errors.bad_request(f"unsupported propagationPolicy {propagation!r}")
        preconditions = delete_options.get("preconditions") or {}
        with self.store.lock:
            if preconditions.get("resourceVersion") not in (None, ""):
                current = self.store.get(rt, namespace, name)
                if metadata(current)["resourceVersion"] != str(preconditions["resourceVersion"]):
                    raise errors.conflict(rt.group, rt.plural, name)
            last = self.store.delete(
                rt, namespace, name, propagation=propagation, uid=preconditions.get("uid"), dry_run=dry_run
            )
            gone = (
                not metadata(last).get("finalizers")
                if dry_run
                else not self.store.exists(rt, namespace, name)
            )
        return last, gone

    def install_crd(self, crd: JsonObject) -> None:
        """Create a CRD unless one of that name exists (used for gpupool's and Karpenter's CRDs)."""
        try:
            self.create(CRDS, None, crd)
        except errors.ApiError as error:
            if error.reason != "AlreadyExists":
                raise

    def _after_crd_write(self, rt: ResourceType, crd: JsonObject) -> None:
        if rt is CRDS and not metadata(crd).get("deletionTimestamp"):
            self.registry.install(metadata(crd)["name"], resource_types(crd))

    def _on_removed(self, rt: ResourceType, obj: JsonObject) -> None:
        if rt is CRDS:
            for served in self.registry.uninstall(metadata(obj)["name"])[:1]:
                self.store.drop_resource(served)

    # ----- pod subresources ----------------------------------------------------------------
    def bind(self, namespace: str, name: str, body: Any, options: WriteOptions | None = None) -> JsonObject:
        return pods.bind(
            self.store, self.clock, namespace, name, body, dry_run=bool(options and options.dry_run)
        )

    def evict(
        self, namespace: str, name: str, options: WriteOptions | None = None, *, body: Any = None
    ) -> JsonObject:
        preconditions = ((body or {}).get("deleteOptions") or {}).get("preconditions") or {}
        uid = preconditions.get("uid") or None
        return pods.evict(self.store, namespace, name, dry_run=bool(options and options.dry_run), uid=uid)
