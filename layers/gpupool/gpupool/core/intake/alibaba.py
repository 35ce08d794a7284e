"""Alibaba Cloud intake: what Function Compute hands a gpupool function becomes one cause.

Role: one converter per Alibaba EventBridge event type (CloudEvents 1.0 with ``source:
acs.ecs``) — ``ecs:Instance:StateChange`` (``data.resourceId`` / ``data.state``) and
``ecs:Instance:PreemptibleInstanceInterruption`` (``data.instanceId`` / ``data.action``) —
plus the FC timer trigger (``triggerTime`` / ``triggerName`` / ``payload``) and the FC 3.0 HTTP
trigger (``rawPath`` / ``body`` / ``headers`` / ``requestContext``) carrying relay CloudEvents.
FC passes the event as bytes; this accepts bytes, text or a mapping. It is also the one place
that tells what kind of trigger an FC event is (``trigger_of``) and reads an HTTP request's body,
once (``envelope.read_http_request``). Unknown or malformed input becomes ``Ignored`` with a
reason; nothing here raises on bad input.

Must not: call Alibaba Cloud, read the clock, log, or decide anything about pools or instances.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpupool.core.intake.causes import (
    Cause,
    Ignored,
    InstanceInterruption,
    InstanceState,
    InstanceStateChanged,
)
from gpupool.core.intake.envelope import Intake, Trigger, as_json_object, read_http_request
from gpupool.core.intake.relay import CloudEvent, intake_relay_request, short_error
from gpupool.core.intake.routing import FunctionName, route, schedule_cause

__all__ = ["ECS_TYPES", "intake_alibaba", "trigger_of"]

_Text = Annotated[str, Field(min_length=1, max_length=253)]

STATE_CHANGE = "ecs:Instance:StateChange"
PREEMPTIBLE = "ecs:Instance:PreemptibleInstanceInterruption"
ECS_SOURCE: Final = "acs.ecs"
ECS_TYPES: tuple[str, ...] = (STATE_CHANGE, PREEMPTIBLE)

# ECS instance states (Alibaba's names) onto the EC2-style states the causes use.
_STATES: dict[str, InstanceState] = {
    "pending": "pending",
    "starting": "pending",
    "running": "running",
    "stopping": "stopping",
    "stopped": "stopped",
    "deleted": "terminated",
}


class _Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class StateData(_Envelope):
    resource_id: _Text = Field(alias="resourceId")
    state: _Text


class PreemptibleData(_Envelope):
    instance_id: _Text = Field(alias="instanceId")
    action: str | None = None


class TimerEvent(_Envelope):
    trigger_time: _Text = Field(alias="triggerTime")
    trigger_name: _Text = Field(alias="triggerName")
    payload: object = None


def _ecs(body: Mapping[str, object]) -> Cause:
    raw_id = body.get("id")
    event_id = raw_id if isinstance(raw_id, str) and raw_id else None
    try:
        event = CloudEvent.model_validate(body)
    except ValidationError as error:
        return Ignored(reason=f"not a CloudEvent: {short_error(error)}", event_id=event_id)
    data = as_json_object(event.data)
    if event.source != ECS_SOURCE:
        # As Lambda's intake keys on (source, detail-type): the EventBridge rule delivers only
        # acs.ecs events, and anything else (a hand-made event, another source) is not ECS's word.
        return Ignored(
            reason=f"not an ECS event: source {event.source!r} is not {ECS_SOURCE}", event_id=event.id
        )
    if event.type not in ECS_TYPES:
        return Ignored(reason=f"no converter for {event.source} {event.type!r}", event_id=event.id)
    if data is None:
        return Ignored(reason=f"{event.type}: data is not a JSON object", event_id=event.id)
    try:
        if event.type == STATE_CHANGE:
            state = StateData.model_validate(data)
            mapped = _STATES.get(state.state.lower())
            if mapped is None:
                return Ignored(reason=f"{event.type}: unknown ECS state {state.state!r}", event_id=event.id)
            return InstanceStateChanged(instance_id=state.resource_id, state=mapped, event_id=event.id)
        preemptible = PreemptibleData.model_validate(data)
        return InstanceInterruption(
            instance_id=preemptible.instance_id, reason="preemptible-interruption", event_id=event.id
        )
    except ValidationError as error:
        return Ignored(reason=f"{event.type}: data.{short_error(error)}", event_id=event.id)


def _timer(body: Mapping[str, object], function: FunctionName | None) -> Cause:
    try:
        timer = TimerEvent.model_validate(body)
    except ValidationError as error:
        return Ignored(reason=f"not an FC timer event: {short_error(error)}")
    # FC timer events carry no id: the trigger and its time identify the tick.
    event_id = f"{timer.trigger_name}@{timer.trigger_time}"
    payload = as_json_object(timer.payload) if timer.payload not in (None, "") else {}
    pool = payload.get("pool") if payload is not None else None
    if pool is not None and (not isinstance(pool, str) or not pool):
        return Ignored(reason="FC timer payload: pool must be a non-empty string", event_id=event_id)
    try:
        return schedule_cause(function, event_id=event_id, pool=pool, trigger="schedule:fc-timer")
    except ValidationError as error:
        return Ignored(reason=f"FC timer payload: {short_error(error)}", event_id=event_id)


def trigger_of(body: Mapping[str, object]) -> Trigger:
    """Which FC trigger delivered ``body``: an HTTP-trigger request (its top-level keys are FC's,
    so a request is told by them first, whatever its body says), a timer tick, an EventBridge
    CloudEvent, or none intake knows."""
    if "rawPath" in body or "requestContext" in body:
        return "http"
    if "triggerTime" in body or "triggerName" in body:
        return "timer"
    if "specversion" in body:
        return "eventbridge"
    return "unknown"


def intake_alibaba(event: object, *, function: FunctionName | None = None) -> Intake:
    """What an FC ``event`` (bytes, text or mapping) is: its cause (``Ignored`` when none), its
    trigger kind and, for an HTTP-trigger request, the request."""
    body = as_json_object(event)
    if body is None:
        return Intake(Ignored(reason="event is not a JSON object"), "unknown")
    trigger = trigger_of(body)
    request = read_http_request(body) if trigger == "http" else None
    if request is not None:
        cause = intake_relay_request(request)
    elif trigger == "timer":
        cause = _timer(body, function)
    elif trigger == "eventbridge":
        cause = _ecs(body)
    else:
        cause = Ignored(reason="not an Alibaba EventBridge, FC timer or FC HTTP event")
    return Intake(route(function, cause) if function is not None else cause, trigger, request)
