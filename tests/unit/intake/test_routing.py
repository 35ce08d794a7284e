"""Routing: each cause kind belongs to exactly one function; a schedule tick means what its function does."""

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
from gpupool.core.intake.routing import FUNCTIONS, as_json_object, decode_body, route, schedule_cause

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


def test_decode_body() -> None:
    assert decode_body("aGk=", is_base64=True) == "hi"
    assert decode_body("hi") == "hi"
    assert decode_body("!!", is_base64=True) is None
    assert decode_body(42) is None
