"""Alibaba intake: ECS EventBridge events, FC timer and FC HTTP events become causes or Ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.intake.alibaba import intake_alibaba
from gpupool.core.intake.causes import (
    Compact,
    Ignored,
    InstanceInterruption,
    InstanceStateChanged,
    NodeChanged,
    Sweep,
)

EVENTS = Path(__file__).resolve().parents[3] / "events" / "alibaba"


def raw(name: str) -> bytes:
    return (EVENTS / f"{name}.json").read_bytes()


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(raw(name))
    return loaded


def test_ecs_state_change_maps_the_state() -> None:
    cause = intake_alibaba(raw("ecs-instance-state-change"), function="bind").cause
    assert cause == InstanceStateChanged(
        instance_id="i-bp1ecr5go2go1q2w****", state="running", event_id="45ef4dewdwe1-7c35-447a-bd93-fab****"
    )


@pytest.mark.parametrize(
    ("ecs_state", "state"),
    [
        ("Pending", "pending"),
        ("Starting", "pending"),
        ("Running", "running"),
        ("Stopping", "stopping"),
        ("Stopped", "stopped"),
        ("Deleted", "terminated"),
    ],
)
def test_every_ecs_state_has_an_ec2_style_name(ecs_state: str, state: str) -> None:
    event = sample("ecs-instance-state-change")
    event["data"]["state"] = ecs_state
    cause = intake_alibaba(event).cause
    assert isinstance(cause, InstanceStateChanged)
    assert cause.state == state


def test_preemptible_interruption() -> None:
    cause = intake_alibaba(raw("ecs-preemptible-interruption"), function="launch").cause
    assert cause == InstanceInterruption(
        instance_id="i-bp1ecr5go2go1q2w****",
        reason="preemptible-interruption",
        event_id="2256A988-0B26-4E2B-820A-8A********E5",
    )


def test_timer_means_what_the_function_does() -> None:
    assert intake_alibaba(raw("fc-timer"), function="bind").cause == Sweep(
        event_id="gpupool-launch-reconcile@2026-11-29T16:00:00Z"
    )
    assert intake_alibaba(raw("fc-timer"), function="compact").cause == Compact(
        event_id="gpupool-launch-reconcile@2026-11-29T16:00:00Z"
    )


def test_timer_payload_narrows_to_a_pool() -> None:
    event = sample("fc-timer")
    event["payload"] = json.dumps({"pool": "pool-b"})
    cause = intake_alibaba(event, function="compact").cause
    assert isinstance(cause, Compact)
    assert cause.pool == "pool-b"


def test_http_trigger_carries_a_relay_cloudevent() -> None:
    cause = intake_alibaba(raw("fc-http-node-ready"), function="bind").cause
    assert isinstance(cause, NodeChanged)
    assert (cause.node, cause.change) == ("ip-10-0-1-23.ec2.internal", "ready")


def _ecs(name: str, **data: object) -> dict[str, Any]:
    event = sample(name)
    event["data"] = data
    return event


BROKEN: list[tuple[str, object, str]] = [
    ("not JSON", b"\xff\xfe", "not a JSON object"),
    ("unknown shape", {"hello": "world"}, "not an Alibaba"),
    ("unknown ECS type", {**sample("ecs-instance-state-change"), "type": "ecs:Disk:Attach"}, "no converter"),
    (
        "unknown ECS state",
        _ecs("ecs-instance-state-change", resourceId="i-1", state="Melting"),
        "unknown ECS state",
    ),
    ("no resourceId", _ecs("ecs-instance-state-change", state="Running"), "resourceId"),
    ("no instanceId", _ecs("ecs-preemptible-interruption", action="delete"), "instanceId"),
    ("timer without name", {"triggerTime": "t"}, "triggerName"),
    ("timer pool not text", {**sample("fc-timer"), "payload": json.dumps({"pool": 3})}, "pool"),
    ("HTTP GET", {**sample("fc-http-node-ready"), "requestContext": {"http": {"method": "GET"}}}, "POST"),
]


@pytest.mark.parametrize(("label", "event", "reason_part"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_event_is_ignored_with_a_reason(label: str, event: object, reason_part: str) -> None:
    cause = intake_alibaba(event, function="bind").cause
    assert isinstance(cause, Ignored), label
    assert reason_part in cause.reason


def test_every_alibaba_sample_is_read() -> None:
    for path in EVENTS.glob("*.json"):
        assert not isinstance(intake_alibaba(path.read_bytes()).cause, Ignored), path.name


def test_intake_tells_each_samples_trigger_kind_and_carries_the_request_of_http_ones() -> None:
    expected = {"fc-timer": "timer", "fc-http": "http", "ecs-": "eventbridge"}
    for path in EVENTS.glob("*.json"):
        intake = intake_alibaba(path.read_bytes(), function="bind")
        kind = next(trigger for prefix, trigger in expected.items() if path.stem.startswith(prefix))
        assert intake.trigger == kind, path.name
        assert (intake.request is not None) == (kind == "http"), path.name
    assert intake_alibaba({"hello": "world"}).trigger == "unknown"


def test_an_http_trigger_request_is_told_by_fcs_own_keys_first() -> None:
    """The handler always treated an event with `rawPath` / `requestContext` as an HTTP call (HMAC
    checked, HTTP answers); intake now reads it as one too, even with timer keys beside them."""
    intake = intake_alibaba({**sample("fc-http-node-ready"), "triggerTime": "t"}, function="bind")
    assert intake.trigger == "http" and isinstance(intake.cause, NodeChanged)


@pytest.mark.parametrize("name", ["ecs-instance-state-change", "ecs-preemptible-interruption"])
@pytest.mark.parametrize("source", ["attacker.example", "acs.ecs.evil", "ACS.ECS", ""])
def test_an_ecs_event_from_another_source_is_not_acted_on(name: str, source: str) -> None:
    """Issue 33, attempt 6: `source: attacker.example` was acted on; Lambda's intake keys on the
    source, and FC's now checks it too."""
    event = sample(name)
    event["source"] = source
    cause = intake_alibaba(json.dumps(event).encode(), function="bind").cause
    assert isinstance(cause, Ignored)
