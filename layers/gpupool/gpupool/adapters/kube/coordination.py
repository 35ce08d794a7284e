"""Leases, evictions and events on the official Kubernetes client (part of `KubeCluster`).

Role: the per-pool provisioning guard as a `coordination.k8s.io/v1` Lease taken with optimistic
concurrency (create, or replace carrying the read resourceVersion: whoever loses the race gets 409
and is told "not taken"). The Lease as this client last wrote it is kept (its resourceVersion and
spec, from the API server's answer), so a warm function takes, renews and gives back a Lease with
one replace each, carrying that resourceVersion: if anyone wrote the Lease since, the replace is
refused (409) and the Lease is read and decided on as it is now; pod eviction through `policy/v1`
Eviction (a PodDisruptionBudget that blocks it is HTTP 429 → `Throttled`); core/v1 Events about any
object (`ObjectEvent`), stamped with the time passed in; `unreadable_warning` is the one about
an object a list skipped. An Event's `involvedObject` is the object reference
client-go's recorder writes (apiVersion, kind, name, namespace, uid, resourceVersion): `kubectl
describe` finds an object's Events by a field selector on its uid, so the object is read once
(GET, a verb the functions' RBAC already grants for the kinds in `_LOOKED_UP`) for its uid and
resourceVersion; an object that cannot be read (gone, or a kind not looked up) keeps a reference
without them, as an Event about a deleted object has. An Event about a namespaced object lives
in its namespace; about a cluster-scoped one in `default`, the only namespace kube-apiserver's
validation of a core/v1 Event without eventTime allows (involvedObject.namespace must match).

Must not: decide who should hold a lease, wait or retry, or read the wall clock.
"""

from __future__ import annotations

import hashlib
import logging
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from gpupool.adapters.kube.errors import translated
from gpupool.adapters.kube.transport import KubeTransport, core_path, group_path
from gpupool.core.model.constants import API_GROUP
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.unreadable import REASON_UNREADABLE, UnreadableObject
from gpupool.service.errors import AlreadyExists, Conflict, DomainError, NotFound, PermanentError
from gpupool.service.ports import ObjectEvent

__all__ = ["EVENT_SOURCE", "Coordination", "lease_expired", "micro_time", "unreadable_warning"]

EVENT_SOURCE = "gpupool"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"  # what the generated client sends a dict patch as
EVENT_MESSAGE_LIMIT = 1024
CORE_KINDS = frozenset({"Node", "Pod", "Namespace", "Event"})
# The apiVersion of the kinds outside core v1 and tensor-fusion.ai/v1 that Events name.
_API_VERSIONS = {model.KIND: model.API_VERSION for model in (KarpenterNodeClaim, KarpenterNodePool)}
_NAME_LIMIT = 253
# Where Events about cluster-scoped objects go (kube-apiserver refuses them in any other namespace).
EVENT_NAMESPACE_CLUSTER_SCOPED = "default"
# Kinds whose uid an Event looks up — the kinds the decisions record Events about (RecordEvent's
# object_kind): (group, plural, namespaced). Each GET is in kube/calls.py.
_LOOKED_UP: dict[str, tuple[str, str, bool]] = {
    "GPUPool": (API_GROUP, "gpupools", False),
    "GPUNodeClaim": (API_GROUP, "gpunodeclaims", False),
    "Pod": ("", "pods", True),
}


def event_name(*parts: str | None) -> str:
    """A stable Event name for one (object, its uid, type, reason, message): the object's name
    plus a digest, so recording the same event again finds the first one, and an object
    recreated under the same name (a new uid) gets Events of its own."""
    digest = hashlib.sha256("\x00".join(p or "" for p in parts).encode()).hexdigest()[:16]
    prefix = (parts[1] or "event")[: _NAME_LIMIT - len(digest) - 1]
    return f"{prefix}.{digest}"


log = logging.getLogger(__name__)


def micro_time(moment: datetime) -> str:
    """Kubernetes MicroTime text (RFC 3339, microseconds, UTC)."""
    if moment.tzinfo is None:
        raise ValueError("lease and event times must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_expired(spec: dict[str, Any], now: datetime) -> bool:
    """True when the lease's last renewal plus its duration is not after `now` (or it has no holder)."""
    if not spec.get("holderIdentity"):
        return True
    renewed = spec.get("renewTime") or spec.get("acquireTime")
    seconds = spec.get("leaseDurationSeconds")
    if not renewed or not seconds:
        return True
    renewed_at = datetime.fromisoformat(str(renewed).replace("Z", "+00:00"))
    if renewed_at.tzinfo is None:
        renewed_at = renewed_at.replace(tzinfo=UTC)
    return renewed_at + timedelta(seconds=int(seconds)) <= now


def unreadable_warning(unreadable: UnreadableObject) -> ObjectEvent:
    """The Warning Event on an object a list skipped, naming its invalid fields (reason
    UnreadableSpec): what the functions' adapter and the relay both record."""
    return ObjectEvent(
        kind=unreadable.kind,
        name=unreadable.name,
        namespace=unreadable.namespace,
        event_type="Warning",
        reason=REASON_UNREADABLE,
        message=unreadable.message,
    )


class Coordination:
    """Leases (in `namespace`), evictions and events for one cluster."""

    def __init__(self, api_client: Any, *, namespace: str, request_timeout_s: float) -> None:
        self._http = KubeTransport(api_client)
        self._namespace = namespace
        self._timeout = request_timeout_s
        self._written: dict[str, dict[str, Any]] = {}  # lease name → the Lease as we last wrote it

    # ---- leases ------------------------------------------------------------------------------
    def _lease_path(self, name: str | None = None) -> str:
        return group_path("coordination.k8s.io", "v1", "leases", name, namespace=self._namespace)

    def _read_lease(self, name: str) -> dict[str, Any]:
        with translated(f"get Lease {self._namespace}/{name}"):
            return self._http.call_json("GET", self._lease_path(name), timeout=self._timeout)

    def _lease_body(self, name: str, spec: dict[str, Any], resource_version: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name, "namespace": self._namespace}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}

    def _replace_lease(self, name: str, spec: dict[str, Any], version: str | None, action: str) -> None:
        with translated(f"{action} Lease {self._namespace}/{name}"):
            self._written[name] = self._http.call_json(
                "PUT",
                self._lease_path(name),
                body=self._lease_body(name, spec, version),
                timeout=self._timeout,
            )

    def try_acquire_lease(self, name: str, *, holder: str, now: datetime, duration: timedelta) -> bool:
        if not holder:
            raise ValueError("a lease holder must be named")
        seconds = max(1, math.ceil(duration.total_seconds()))
        written = self._written.get(name)
        if written is not None:  # as we last wrote it: unless someone wrote it since, this is it
            try:
                return self._take(name, written, holder=holder, now=now, seconds=seconds)
            except (Conflict, NotFound):
                self._written.pop(name, None)
        try:
            current = self._read_lease(name)
        except NotFound:
            return self._create_lease(name, holder=holder, now=now, seconds=seconds)
        try:
            return self._take(name, current, holder=holder, now=now, seconds=seconds)
        except (Conflict, NotFound):  # a concurrent writer won the race
            return False

    def _create_lease(self, name: str, *, holder: str, now: datetime, seconds: int) -> bool:
        stamp = micro_time(now)
        fresh: dict[str, Any] = {
            "holderIdentity": holder,
            "leaseDurationSeconds": seconds,
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        }
        try:
            with translated(f"create Lease {self._namespace}/{name}"):
                self._written[name] = self._http.call_json(
                    "POST",
                    self._lease_path(),
                    body=self._lease_body(name, fresh, None),
                    timeout=self._timeout,
                )
        except Conflict:  # AlreadyExists included: another invocation created it first
            return False
        return True

    def _take(self, name: str, current: dict[str, Any], *, holder: str, now: datetime, seconds: int) -> bool:
        """Take `current` (the Lease as read or as last written) for `holder` if it is free,
        expired or already theirs; raises Conflict / NotFound when it changed meanwhile."""
        spec = dict(current.get("spec") or {})
        previous = spec.get("holderIdentity")
        if previous != holder and not lease_expired(spec, now):
            return False
        stamp = micro_time(now)
        spec.update({"holderIdentity": holder, "leaseDurationSeconds": seconds, "renewTime": stamp})
        if previous != holder:
            spec["acquireTime"] = stamp
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        version = (current.get("metadata") or {}).get("resourceVersion")
        self._replace_lease(name, spec, version, "replace")
        return True

    def release_lease(self, name: str, *, holder: str) -> None:
        written = self._written.get(name)
        if written is not None and (written.get("spec") or {}).get("holderIdentity") == holder:
            try:
                self._give_back(name, written)
                return
            except (Conflict, NotFound):
                self._written.pop(name, None)
        try:
            current = self._read_lease(name)
        except NotFound:
            return
        if (current.get("spec") or {}).get("holderIdentity") != holder:
            return
        try:
            self._give_back(name, current)
        except (Conflict, NotFound):  # someone else took it or removed it: nothing of ours to give back
            return

    def _give_back(self, name: str, current: dict[str, Any]) -> None:
        spec = dict(current.get("spec") or {})
        spec.pop("holderIdentity", None)
        self._replace_lease(name, spec, (current.get("metadata") or {}).get("resourceVersion"), "release")

    # ---- evictions ---------------------------------------------------------------------------
    def evict_pod(self, namespace: str, name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        with translated(f"evict Pod {namespace}/{name}"):
            path = core_path("pods", name, namespace=namespace, sub="eviction")
            self._http.call("POST", path, body=body, timeout=self._timeout)

    # ---- events ------------------------------------------------------------------------------
    def record_event(self, event: ObjectEvent, *, now: datetime) -> None:
        kind, name, namespace = event.kind, event.name, event.namespace
        event_type, reason, message = event.event_type, event.reason, event.message
        if not kind or not name or not reason:
            raise PermanentError(f"invalid event: kind={kind!r} name={name!r} reason={reason!r}")
        if event_type not in ("Normal", "Warning"):
            raise PermanentError(f"invalid event type {event_type!r} (Normal or Warning)")
        event_namespace = namespace or EVENT_NAMESPACE_CLUSTER_SCOPED
        involved = self._involved_object(kind, name, namespace)
        stamp = micro_time(now)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": event_name(kind, name, namespace, involved.get("uid"), event_type, reason, message),
                "namespace": event_namespace,
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message[:EVENT_MESSAGE_LIMIT],
            "type": event_type,
            "source": {"component": EVENT_SOURCE},
            "reportingComponent": EVENT_SOURCE,
            "reportingInstance": EVENT_SOURCE,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self._create_or_count(body, stamp)
        except DomainError as error:
            if error.retryable:
                # Events are best effort (port contract): a busy API server must not fail the action.
                log.warning("event %s for %s %s not recorded: %s", reason, kind, name, error.message)
                return
            if isinstance(error, PermanentError):
                raise
            raise PermanentError(error.message, code=error.code) from error

    def _involved_object(self, kind: str, name: str, namespace: str | None) -> dict[str, Any]:
        """The Event's object reference: with uid and resourceVersion when the object reads."""
        involved: dict[str, Any] = {
            "apiVersion": "v1" if kind in CORE_KINDS else _API_VERSIONS.get(kind, f"{API_GROUP}/v1"),
            "kind": kind,
            "name": name,
        }
        if namespace:
            involved["namespace"] = namespace
        found = _LOOKED_UP.get(kind)
        if found is None or (found[2] and not namespace):
            return involved
        group, plural, namespaced = found
        try:
            with translated(f"get {kind} {name} for its Event"):
                if group:
                    path = group_path(group, "v1", plural, name)
                else:
                    path = core_path(plural, name, namespace=namespace if namespaced else None)
                metadata = self._http.call_json("GET", path, timeout=self._timeout).get("metadata") or {}
        except (DomainError, ValueError, AttributeError):
            return involved  # gone, or unreadable now: the reference a deleted object's Event keeps
        for key in ("uid", "resourceVersion"):
            if metadata.get(key):
                involved[key] = str(metadata[key])
        return involved

    def _create_or_count(self, body: dict[str, Any], stamp: str) -> None:
        """Create the Event, or — when the same event was recorded before — bump its count and
        lastTimestamp, as kubelet's event correlator does: a condition reported by every
        invocation (capacity exhausted, max reached) stays one Event instead of one per minute."""
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        try:
            with translated(f"create Event {name}"):
                self._http.call(
                    "POST", core_path("events", namespace=namespace), body=body, timeout=self._timeout
                )
            return
        except AlreadyExists:
            pass
        path = core_path("events", name, namespace=namespace)
        with translated(f"get Event {name}"):
            current = self._http.call_json("GET", path, timeout=self._timeout)
        patch = {"count": int(current.get("count") or 1) + 1, "lastTimestamp": stamp}
        with translated(f"patch Event {name}"):
            self._http.call("PATCH", path, body=patch, content_type=STRATEGIC_MERGE, timeout=self._timeout)
