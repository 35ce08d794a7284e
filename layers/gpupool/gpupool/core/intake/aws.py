"""AWS intake: every Lambda event gpupool receives becomes exactly one cause.

Role: one converter per EventBridge (source, detail-type) — EC2 Instance State-change
Notification, EC2 Spot Instance Interruption Warning, EC2 Instance Rebalance Recommendation,
``Scheduled Event`` from EventBridge rules (aws.events) and EventBridge Scheduler
(aws.scheduler, whose ``detail`` arrives as the text ``"{}"``) — plus Lambda Function URL
requests (payload format 2.0) carrying the relay's CloudEvents. It is also the one place that
tells what kind of trigger an event is (``is_function_url``: an HTTP request; otherwise an
EventBridge event, ``Scheduled Event`` ones being schedules) and reads a request's body, once
(``envelope.read_http_request``). Unknown or malformed input becomes ``Ignored`` with a reason;
nothing here raises on bad input.

Must not: call AWS, read the clock, log, or decide anything about pools or instances.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpupool.core.intake.causes import (
    Cause,
    Ignored,
    InstanceInterruption,
    InstanceStateChanged,
)
from gpupool.core.intake.envelope import Intake, Trigger, as_json_object, read_http_request
from gpupool.core.intake.relay import intake_relay_request, short_error
from gpupool.core.intake.routing import FunctionName, route, schedule_cause

__all__ = ["DETAIL_TYPES", "intake_aws", "is_function_url"]

_Text = Annotated[str, Field(min_length=1, max_length=253)]

_EC2 = "aws.ec2"
STATE_CHANGE = "EC2 Instance State-change Notification"
SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE = "EC2 Instance Rebalance Recommendation"
SCHEDULED = "Scheduled Event"


class _Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class EventBridgeEvent(_Envelope):
    """The EventBridge envelope (version "0"); ``detail`` is read per detail-type."""

    version: str | None = None
    id: _Text
    detail_type: _Text = Field(alias="detail-type")
    source: _Text
    resources: list[str] = Field(default_factory=list)
    detail: object = None


class InstanceDetail(_Envelope):
    instance_id: _Text = Field(alias="instance-id")


class StateDetail(InstanceDetail):
    state: str


class ScheduleDetail(_Envelope):
    """Our schedules may narrow a tick to one pool; a bare schedule covers every pool."""

    pool: _Text | None = None


def _detail(event: EventBridgeEvent) -> Mapping[str, object]:
    detail = as_json_object(event.detail if event.detail is not None else {})
    if detail is None:
        raise ValueError("detail is not a JSON object")
    return detail


def _state_change(event: EventBridgeEvent, function: FunctionName | None) -> Cause:
    detail = StateDetail.model_validate(_detail(event))
    return InstanceStateChanged.model_validate(
        {"instance_id": detail.instance_id, "state": detail.state, "event_id": event.id}
    )


def _spot_warning(event: EventBridgeEvent, function: FunctionName | None) -> Cause:
    detail = InstanceDetail.model_validate(_detail(event))
    return InstanceInterruption(instance_id=detail.instance_id, reason="spot-interruption", event_id=event.id)


def _rebalance(event: EventBridgeEvent, function: FunctionName | None) -> Cause:
    detail = InstanceDetail.model_validate(_detail(event))
    return InstanceInterruption(
        instance_id=detail.instance_id, reason="rebalance-recommendation", event_id=event.id
    )


def _scheduled(event: EventBridgeEvent, function: FunctionName | None) -> Cause:
    detail = ScheduleDetail.model_validate(_detail(event))
    return schedule_cause(function, event_id=event.id, pool=detail.pool, trigger=f"schedule:{event.source}")


_CONVERTERS: dict[tuple[str, str], Callable[[EventBridgeEvent, FunctionName | None], Cause]] = {
    (_EC2, STATE_CHANGE): _state_change,
    (_EC2, SPOT_WARNING): _spot_warning,
    (_EC2, REBALANCE): _rebalance,
    ("aws.events", SCHEDULED): _scheduled,
    ("aws.scheduler", SCHEDULED): _scheduled,
}
# (source, detail-type) pairs the template's EventBridge rules must match, and nothing else.
DETAIL_TYPES: tuple[tuple[str, str], ...] = tuple(_CONVERTERS)


def is_function_url(event: object) -> bool:
    """Whether ``event`` is a Lambda Function URL request (HTTP API payload format 2.0)."""
    return isinstance(event, Mapping) and "requestContext" in event and "detail-type" not in event


def _eventbridge(event: Mapping[str, object], function: FunctionName | None) -> Cause:
    raw_id = event.get("id")
    event_id = raw_id if isinstance(raw_id, str) and raw_id else None
    try:
        envelope = EventBridgeEvent.model_validate(event)
    except ValidationError as error:
        return Ignored(reason=f"not an EventBridge event: {short_error(error)}", event_id=event_id)
    convert = _CONVERTERS.get((envelope.source, envelope.detail_type))
    if convert is None:
        return Ignored(
            reason=f"no converter for {envelope.source} {envelope.detail_type!r}", event_id=envelope.id
        )
    try:
        return convert(envelope, function)
    except ValidationError as error:
        return Ignored(reason=f"{envelope.detail_type}: detail.{short_error(error)}", event_id=envelope.id)
    except ValueError as error:
        return Ignored(reason=f"{envelope.detail_type}: {error}", event_id=envelope.id)


def intake_aws(event: object, *, function: FunctionName | None = None) -> Intake:
    """What a Lambda ``event`` is: its cause (``Ignored``, with a reason, when there is none), its
    trigger kind and, for a Function URL request, the request.

    ``function`` gives a schedule tick its meaning (see ``routing.schedule_cause``) and, when
    set, turns a cause meant for another function into ``Ignored``.
    """
    body = as_json_object(event)
    if body is None:
        return Intake(Ignored(reason="event is not a JSON object"), "unknown")
    if is_function_url(body):
        request = read_http_request(body)
        cause = intake_relay_request(request)
        return Intake(route(function, cause) if function is not None else cause, "http", request)
    trigger: Trigger = "schedule" if body.get("detail-type") == SCHEDULED else "eventbridge"
    cause = _eventbridge(body, function)
    return Intake(route(function, cause) if function is not None else cause, trigger)
