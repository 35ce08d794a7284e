"""Relay webhooks: the CloudEvents 1.0 the in-cluster relay POSTs to the functions.

Role: read a relayed CloudEvent — structured mode only (the whole event as a JSON body, which the
relay's signature covers) — and turn it into its cause: the event type's own definition
(``gpupool.core.vocabulary.events``: its data model, listed once there and documented in
docs/events.md) reads the data, and ``CAUSES`` says which cause each type stands for. Anything
unknown or malformed becomes ``Ignored`` with a reason; nothing here raises on bad input. A
request carrying any ``ce-*`` header (binary mode) is refused, with no event id: those headers are
outside what the HMAC, SigV4 payload hash or ACS3 ``x-acs-content-sha256`` covers, so an id, type
or source read from them could be changed on a captured request — the replay ledger, keyed by the
id, would act on one signed body many times.

Must not: know which platform delivered the request (Lambda Function URL, FC HTTP trigger: both
arrive as an ``envelope.HttpRequest``), read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpupool.core.intake.causes import (
    Cause,
    ClaimDeleted,
    Compact,
    Ignored,
    NodeChange,
    NodeChanged,
    Reconcile,
)
from gpupool.core.intake.envelope import HttpRequest, as_json_object
from gpupool.core.vocabulary.events import (
    CLAIM_DELETED,
    CLUSTER_CHANGED,
    NODE_DELETED,
    NODE_JOINED,
    NODE_READY,
    POD_UNSCHEDULABLE,
    POOL_CHANGED,
    POOL_MANUAL_COMPACTION,
    RelayEventType,
    relay_event_of_type,
)

__all__ = ["CAUSES", "CloudEvent", "intake_cloudevent", "intake_relay_request", "relay_cause", "short_error"]

_Text = Annotated[str, Field(min_length=1, max_length=253)]


def _node_changed(change: NodeChange) -> Callable[[Any, str, str], Cause]:
    def becomes(data: Any, name: str, event_id: str) -> Cause:
        return NodeChanged(node=data.node, change=change, claim=data.claim, event_id=event_id)

    return becomes


# The cause each relay event type stands for: `(its data, its name, the event id) -> Cause`.
CAUSES: Mapping[str, Callable[[Any, str, str], Cause]] = {
    POD_UNSCHEDULABLE.name: lambda data, name, event_id: Reconcile(
        pool=data.pool, trigger=name, event_id=event_id
    ),
    POOL_CHANGED.name: lambda data, name, event_id: Reconcile(
        pool=data.pool, trigger=name, event_id=event_id
    ),
    CLUSTER_CHANGED.name: lambda data, name, event_id: Reconcile(pool=None, trigger=name, event_id=event_id),
    POOL_MANUAL_COMPACTION.name: lambda data, name, event_id: Compact(
        pool=data.pool, manual=True, event_id=event_id
    ),
    NODE_JOINED.name: _node_changed("joined"),
    NODE_READY.name: _node_changed("ready"),
    NODE_DELETED.name: _node_changed("deleted"),
    CLAIM_DELETED.name: lambda data, name, event_id: ClaimDeleted(claim=data.claim, event_id=event_id),
}


def relay_cause(event_type: RelayEventType[Any], data: Mapping[str, object], *, event_id: str) -> Cause:
    """The cause an event of `event_type` with `data` stands for; raises ValidationError."""
    return CAUSES[event_type.name](event_type.data.model_validate(data), event_type.name, event_id)


class CloudEvent(BaseModel):
    """The CloudEvents 1.0 context attributes gpupool reads, and the data (foreign: the rest ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    specversion: _Text
    id: _Text
    source: _Text
    type: _Text
    time: datetime | None = None
    datacontenttype: str | None = None
    data: object = None


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
    event_type = relay_event_of_type(cloudevent.type)
    if event_type is None:
        return Ignored(reason=f"unknown relay event type {cloudevent.type!r}", event_id=event_id)
    data = as_json_object(cloudevent.data)
    if data is None:
        return Ignored(reason=f"{cloudevent.type}: data is not a JSON object", event_id=event_id)
    try:
        return relay_cause(event_type, data, event_id=cloudevent.id)
    except ValidationError as error:
        return Ignored(reason=f"{cloudevent.type}: data.{short_error(error)}", event_id=event_id)


def intake_relay_request(request: HttpRequest) -> Cause:
    """A relay's HTTP request → its cause: POST only, structured mode only (module docstring)."""
    if request.method is not None and request.method.upper() != "POST":
        return Ignored(reason=f"relay webhooks are POST requests, not {request.method}")
    text = request.text
    if text is None:
        return Ignored(reason="request body is not UTF-8 text")
    if any(name.lower().startswith("ce-") for name in request.headers):
        return Ignored(
            reason=(
                "binary-mode CloudEvents are refused: their ce-* headers are not covered by the "
                "signature; the relay sends structured mode (the whole event in the body)"
            )
        )
    return intake_cloudevent(text)
