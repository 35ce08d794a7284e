"""Routing: each cause kind belongs to exactly one function; a schedule tick means what its function does.
Also the envelope helpers every parser shares: JSON objects from text, bytes or mappings, and an
HTTP request's body decoded once (the bytes a signature covers and the text the parser reads)."""

from __future__ import annotations

import typing

import pytest

from gpupool.core.intake.causes import (
    Cause,
    ClaimDeleted,
    Compact,
    Ignored,
    InstanceInterruption,
    InstanceStateChanged,
    NodeChanged,
    Reconcile,
    Sweep,
)
from gpupool.core.intake.envelope import Intake, as_json_object, read_http_request
from gpupool.core.intake.routing import FUNCTIONS, route, schedule_cause

SAMPLES: list[Cause] = [
    Reconcile(trigger="schedule", event_id="e"),
    InstanceStateChanged(instance_id="i-1", state="running", event_id="e"),
    InstanceInterruption(instance_id="i-1", reason="spot-interruption", event_id="e"),
    NodeChanged(node="n", change="ready", event_id="e"),
    ClaimDeleted(claim="c", event_id="e"),
    Compact(event_id="e"),
    Sweep(event_id="e"),
]


def test_samples_cover_every_cause_kind() -> None:
    union = typing.get_args(typing.get_args(Cause)[0])
    assert {type(cause) for cause in SAMPLES} | {Ignored} == set(union)


@pytest.mark.parametrize("cause", SAMPLES, ids=lambda cause: cause.kind)
def test_each_cause_belongs_to_exactly_one_function(cause: Cause) -> None:
    owners = [function for function in FUNCTIONS if route(function, cause) == cause]
    assert len(owners) == 1
    for function in FUNCTIONS:
        if function not in owners:
            routed = route(function, cause)
            assert isinstance(routed, Ignored)
            assert owners[0] in routed.reason


def test_ignored_stays_ignored_everywhere() -> None:
    ignored = Ignored(reason="unreadable")
    assert all(route(function, ignored) is ignored for function in FUNCTIONS)


def test_schedule_tick_per_function() -> None:
    assert schedule_cause("launch", event_id="e", pool="p") == Reconcile(
        pool="p", trigger="schedule", event_id="e"
    )
    assert schedule_cause("bind", event_id="e", pool="p") == Sweep(event_id="e")
    assert schedule_cause("compact", event_id="e", pool="p") == Compact(pool="p", event_id="e")
    assert isinstance(schedule_cause(None, event_id="e"), Reconcile)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        (b'{"a": 1}', {"a": 1}),
        ({"a": 1}, {"a": 1}),
        ("[1]", None),
        ("{", None),
        (b"\xff", None),
        ({1: "x"}, None),
        (None, None),
    ],
)
def test_as_json_object(value: object, expected: object) -> None:
    assert as_json_object(value) == expected


def _body(body: object, is_base64: object = False) -> tuple[bytes | None, str | None]:
    request = read_http_request({"body": body, "isBase64Encoded": is_base64})
    return request.body, request.text


def test_decode_body() -> None:
    assert _body("aGk=", is_base64=True) == (b"hi", "hi")
    assert _body("hi") == (b"hi", "hi")
    assert _body("aGk=", is_base64="true") == (b"aGk=", "aGk=")  # only a JSON true means base64
    assert _body(None) == (b"", "")
    assert _body("!!", is_base64=True) == (None, None)
    assert _body(42) == (None, None)
    assert _body("\ud800") == (None, None)  # text no client could have sent as UTF-8
    assert _body("/w==", is_base64=True) == (b"\xff", None)  # bytes a signature covers, not text


def test_an_http_request_reads_its_method_and_string_headers() -> None:
    envelope = {"requestContext": {"http": {"method": "POST"}}, "headers": {"A": "1", "B": 2}, "body": "{}"}
    request = read_http_request(envelope)
    assert (request.method, dict(request.headers), request.body) == ("POST", {"A": "1"}, b"{}")
    assert read_http_request({"requestContext": "x", "headers": []}).method is None


def test_an_intake_carries_a_request_exactly_when_it_is_http() -> None:
    request = read_http_request({"body": "{}"})
    with pytest.raises(ValueError, match="exactly when"):
        Intake(Ignored(reason="x"), "http")
    with pytest.raises(ValueError, match="exactly when"):
        Intake(Ignored(reason="x"), "schedule", request)
    assert Intake(Ignored(reason="x"), "http", request).request is request
