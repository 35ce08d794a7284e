"""Relay webhooks: the CloudEvents 1.0 the in-cluster relay POSTs to the functions.

Role: one converter per event type (``ai.tensor-fusion.gpupool.*``, listed in ``RELAY_TYPES``
and documented in docs/events.md). Reads structured mode (the whole event as a JSON body) and
binary mode (``ce-*`` headers, data as the body). Anything unknown or malformed becomes
``Ignored`` with a reason; nothing here raises on bad input.

Must not: know the transport (Lambda Function URL, FC HTTP trigger), read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpupool.core.intake.causes import Cause, ClaimDeleted, Compact, Ignored, NodeChanged, Reconcile
from gpupool.core.intake.routing import as_json_object, decode_body

__all__ = ["RELAY_TYPES", "TYPE_PREFIX", "intake_cloudevent", "intake_relay_http", "short_error"]

TYPE_PREFIX = "ai.tensor-fusion.gpupool."

_Text = Annotated[str, Field(min_length=1, max_length=253)]


class _Envelope(BaseModel):
    """Foreign-shaped data: read what we need, ignore the rest."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class CloudEvent(_Envelope):
    """The CloudEvents 1.0 context attributes gpupool reads, and the data."""

    specversion: _Text
    id: _Text
    source: _Text
    type: _Text
    time: datetime | None = None
    datacontenttype: str | None = None
    data: object = None


class PodData(_Envelope):
    namespace: _Text
    name: _Text
    pool: _Text | None = None


class PoolData(_Envelope):
    pool: _Text


class ClusterData(_Envelope):
    cluster: _Text


class NodeData(_Envelope):
    node: _Text
    claim: _Text | None = None


class ClaimData(_Envelope):
    claim: _Text


class ManualCompactionData(_Envelope):
    pool: _Text
    # The annotation's RFC3339 value, kept as text for the logs; the service does not trust it.
    requested_at: str | None = Field(default=None, alias="requestedAt")


def _pod_unschedulable(event: CloudEvent, data: Mapping[str, object]) -> Cause:
    pod = PodData.model_validate(data)
    return Reconcile(pool=pod.pool, trigger="pod.unschedulable", event_id=event.id)


def _pool_changed(event: CloudEvent, data: Mapping[str, object]) -> Cause:
    return Reconcile(pool=PoolData.model_validate(data).pool, trigger="pool.changed", event_id=event.id)


def _cluster_changed(event: CloudEvent, data: Mapping[str, object]) -> Cause:
    ClusterData.model_validate(data)
    return Reconcile(pool=None, trigger="cluster.changed", event_id=event.id)


def _node(change: str) -> Callable[[CloudEvent, Mapping[str, object]], Cause]:
    def convert(event: CloudEvent, data: Mapping[str, object]) -> Cause:
        node = NodeData.model_validate(data)
        return NodeChanged.model_validate(
            {"node": node.node, "change": change, "claim": node.claim, "event_id": event.id}
        )

    return convert


def _claim_deleted(event: CloudEvent, data: Mapping[str, object]) -> Cause:
    return ClaimDeleted(claim=ClaimData.model_validate(data).claim, event_id=event.id)


def _manual_compaction(event: CloudEvent, data: Mapping[str, object]) -> Cause:
    return Compact(pool=ManualCompactionData.model_validate(data).pool, manual=True, event_id=event.id)


_CONVERTERS: dict[str, Callable[[CloudEvent, Mapping[str, object]], Cause]] = {
    TYPE_PREFIX + "pod.unschedulable": _pod_unschedulable,
    TYPE_PREFIX + "pool.changed": _pool_changed,
    TYPE_PREFIX + "cluster.changed": _cluster_changed,
    TYPE_PREFIX + "node.joined": _node("joined"),
    TYPE_PREFIX + "node.ready": _node("ready"),
    TYPE_PREFIX + "node.deleted": _node("deleted"),
    TYPE_PREFIX + "claim.deleted": _claim_deleted,
    TYPE_PREFIX + "pool.manual-compaction": _manual_compaction,
}
RELAY_TYPES: tuple[str, ...] = tuple(_CONVERTERS)


def short_error(error: ValidationError) -> str:
    """The first validation problem as one line: ``field.path: message``."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "value"
    return f"{where}: {first['msg']}"


def intake_cloudevent(event: object) -> Cause:
    """A structured-mode CloudEvent (a JSON object, or its text) → its cause, or ``Ignored``."""
    body = as_json_object(event)
    if body is None:
        return Ignored(reason="relay event is not a JSON object")
    raw_id = body.get("id")
    event_id = raw_id if isinstance(raw_id, str) and raw_id else None
    try:
        cloudevent = CloudEvent.model_validate(body)
    except ValidationError as error:
        return Ignored(reason=f"not a CloudEvent: {short_error(error)}", event_id=event_id)
    if cloudevent.specversion != "1.0":
        return Ignored(
            reason=f"CloudEvents specversion {cloudevent.specversion!r} is not 1.0", event_id=event_id
        )
    convert = _CONVERTERS.get(cloudevent.type)
    if convert is None:
        return Ignored(reason=f"unknown relay event type {cloudevent.type!r}", event_id=event_id)
    data = as_json_object(cloudevent.data)
    if data is None:
        return Ignored(reason=f"{cloudevent.type}: data is not a JSON object", event_id=event_id)
    try:
        return convert(cloudevent, data)
    except ValidationError as error:
        return Ignored(reason=f"{cloudevent.type}: data.{short_error(error)}", event_id=event_id)


def intake_relay_http(*, body: object, is_base64: object, headers: object) -> Cause:
    """An HTTP request from the relay → its cause: binary mode when ``ce-*`` headers say so."""
    text = decode_body(body if body is not None else "", is_base64=is_base64)
    if text is None:
        return Ignored(reason="request body is not UTF-8 text")
    lowered: dict[str, str] = {}
    if isinstance(headers, Mapping):
        lowered = {str(k).lower(): v for k, v in headers.items() if isinstance(v, str)}
    if "ce-specversion" not in lowered:
        return intake_cloudevent(text)
    data = as_json_object(text)
    if data is None:
        return Ignored(
            reason="binary-mode CloudEvent body is not a JSON object", event_id=lowered.get("ce-id")
        )
    attributes: dict[str, object] = {
        name[3:]: value for name, value in lowered.items() if name.startswith("ce-") and len(name) > 3
    }
    attributes["data"] = data
    return intake_cloudevent(attributes)
