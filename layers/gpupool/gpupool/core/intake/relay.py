"""Relay webhooks: the CloudEvents 1.0 the in-cluster relay POSTs to the functions.

Role: read a relayed CloudEvent — structured mode only (the whole event as a JSON body, which the
relay's signature covers) — and turn it into its cause with the event type's own
definition (``gpupool.core.vocabulary.events``: data model and converter, listed once there and
documented in docs/events.md). Anything unknown or malformed becomes ``Ignored`` with a reason;
nothing here raises on bad input. A request carrying any ``ce-*`` header (binary mode) is refused,
with no event id: those headers are outside what the HMAC, SigV4 payload hash or ACS3
``x-acs-content-sha256`` covers, so an id, type or source read from them could be changed on a
captured request — the replay ledger, keyed by the id, would act on one signed body many times.

Must not: know which platform delivered the request (Lambda Function URL, FC HTTP trigger: both
arrive as an ``envelope.HttpRequest``), read the clock, or log.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpupool.core.intake.causes import Cause, Ignored
from gpupool.core.intake.envelope import HttpRequest, as_json_object
from gpupool.core.vocabulary.events import relay_event_of_type

__all__ = ["CloudEvent", "intake_cloudevent", "intake_relay_request", "short_error"]

_Text = Annotated[str, Field(min_length=1, max_length=253)]


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
        return event_type.cause(data, event_id=cloudevent.id)
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
