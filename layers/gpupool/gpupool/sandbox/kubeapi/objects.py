"""Object metadata rules shared by every kind: what create stamps, what update may change.

`prepare_create` fills uid, resourceVersion placeholder, generation, creationTimestamp and a
generated name; `prepare_update` merges a caller's object onto the stored one, keeping the
fields the server owns (uid, creationTimestamp, deletionTimestamp, generation) and enforcing
the status-subresource split: the main endpoint keeps the stored status, `/status` keeps
everything but status.

Must not: lock, store, or emit events; these are pure functions over dicts.
"""

from __future__ import annotations

import copy
import secrets
import uuid
from datetime import datetime
from typing import Any

from gpupool.sandbox.kubeapi.clock import rfc3339
from gpupool.sandbox.kubeapi.errors import bad_request
from gpupool.sandbox.kubeapi.resources import ResourceType

JsonObject = dict[str, Any]
# Upstream's generateName alphabet: no vowels or look-alike digits, so no accidental words.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_INITIAL_PHASE = {"pods": "Pending", "namespaces": "Active"}
SERVER_OWNED = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


def metadata(obj: JsonObject) -> JsonObject:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def check_type(rt: ResourceType, body: Any) -> JsonObject:
    """The body must be an object of this resource's kind (apiVersion may name any served version)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    kind = body.get("kind")
    if kind is not None and kind != rt.kind:
        raise bad_request(f"the kind of the body ({kind}) does not match the resource ({rt.kind})")
    api_version = body.get("apiVersion")
    if api_version is not None and api_version.rpartition("/")[0] != rt.group:
        raise bad_request(f"the API version in the body ({api_version}) does not match the resource's group")
    if "metadata" in body and not isinstance(body["metadata"], dict):
        raise bad_request("metadata must be an object")
    return body


def prepare_create(rt: ResourceType, body: JsonObject, namespace: str | None, now: datetime) -> JsonObject:
    """A new object as it will be stored, without its resourceVersion."""
    obj = copy.deepcopy(body)
    obj["apiVersion"] = rt.api_version
    obj["kind"] = rt.kind
    meta = obj.setdefault("metadata", {})
    body_namespace = meta.get("namespace")
    if rt.namespaced:
        if body_namespace and body_namespace != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generated_name(str(meta["generateName"]))
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = rfc3339(now)
    if rt.tracks_generation:
        meta["generation"] = 1
    initial_phase = _INITIAL_PHASE.get(rt.plural) if rt.group == "" else None
    if initial_phase is not None:
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("phase", initial_phase)
    if rt.has_status and not rt.builtin:
        # Custom resources with a status subresource drop status on create, as upstream does.
        obj.pop("status", None)
    return obj


def _without(obj: JsonObject, *keys: str) -> JsonObject:
    return {key: value for key, value in obj.items() if key not in keys}


def prepare_update(
    rt: ResourceType, current: JsonObject, body: JsonObject, *, status_only: bool
) -> JsonObject:
    """The object an update stores, given the stored one and the caller's full object."""
    if status_only:
        updated = copy.deepcopy(current)
        if "status" in body:
            updated["status"] = copy.deepcopy(body["status"])
        else:
            updated.pop("status", None)
        return updated
    updated = copy.deepcopy(body)
    updated["apiVersion"] = current["apiVersion"]
    updated["kind"] = rt.kind
    meta = updated.setdefault("metadata", {})
    current_meta = metadata(current)
    for key in (*SERVER_OWNED, "name", "namespace"):
        if key in current_meta:
            meta[key] = current_meta[key]
        else:
            meta.pop(key, None)
    meta.pop("resourceVersion", None)
    if rt.has_status:
        if "status" in current:
            updated["status"] = copy.deepcopy(current["status"])
        else:
            updated.pop("status", None)
    if rt.tracks_generation and spec_of(updated) != spec_of(current):
        meta["generation"] = int(current_meta.get("generation") or 0) + 1
    return updated


def spec_of(obj: JsonObject) -> JsonObject:
    """Everything generation tracks: all top-level fields except metadata, status and type info."""
    return _without(obj, "metadata", "status", "apiVersion", "kind")


def same_content(left: JsonObject, right: JsonObject) -> bool:
    """Equal apart from resourceVersion: such an update is a no-op and bumps nothing."""
    left_meta = _without(metadata(left), "resourceVersion")
    right_meta = _without(metadata(right), "resourceVersion")
    return left_meta == right_meta and _without(left, "metadata") == _without(right, "metadata")
