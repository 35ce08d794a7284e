"""Fuzz: every intake parser returns a cause for arbitrary JSON — never raises — and explains each Ignored;
the HTTP request reader never raises either, whatever the body, its base64 flag and headers are.

Two kinds of input: arbitrary JSON values, and the real samples with one field (at any depth,
including inside a Function URL body) replaced by arbitrary JSON, which reaches the converters.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from gpupool.core.intake.alibaba import intake_alibaba
from gpupool.core.intake.aws import intake_aws
from gpupool.core.intake.causes import Ignored
from gpupool.core.intake.envelope import read_http_request
from gpupool.core.intake.relay import intake_cloudevent, intake_relay_request
from gpupool.core.intake.routing import FUNCTIONS

EVENTS = Path(__file__).resolve().parents[3] / "events"
SAMPLES = [json.loads(path.read_text()) for path in sorted(EVENTS.glob("*/*.json"))]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


def _paths(value: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            paths += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            paths += _paths(child, (*prefix, index))
    return paths


def _unwrap_bodies(event: Any) -> Any:
    """Function URL / FC HTTP bodies as parsed JSON, so mutations reach the CloudEvent inside."""
    event = copy.deepcopy(event)
    if isinstance(event, dict) and isinstance(event.get("body"), str):
        event["body"] = json.loads(event["body"])
    return event


def _rewrap_bodies(event: Any) -> Any:
    if isinstance(event, dict) and isinstance(event.get("body"), dict | list):
        event["body"] = json.dumps(event["body"])
    return event


@st.composite
def mutated_samples(draw: st.DrawFn) -> Any:
    event = _unwrap_bodies(draw(st.sampled_from(SAMPLES)))
    paths = _paths(event)
    path = draw(st.sampled_from(paths))
    target = event
    for key in path[:-1]:
        target = target[key]
    if draw(st.booleans()) and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = draw(json_values)
    return _rewrap_bodies(event)


inputs = (
    json_values
    | mutated_samples()
    | json_values.map(json.dumps)
    | mutated_samples().map(lambda event: json.dumps(event).encode())
)

PARSERS: list[Callable[[object], BaseModel]] = [
    lambda event: intake_aws(event).cause,
    lambda event: intake_alibaba(event).cause,
    intake_cloudevent,
    *[lambda event, f=f: intake_aws(event, function=f).cause for f in FUNCTIONS],
    *[lambda event, f=f: intake_alibaba(event, function=f).cause for f in FUNCTIONS],
]


def _relay_http(*, body: object, is_base64: object, headers: object) -> BaseModel:
    envelope = {"body": body, "isBase64Encoded": is_base64, "headers": headers}
    return intake_relay_request(read_http_request(envelope))


def _check(cause: BaseModel) -> None:
    assert cause.model_config.get("frozen") is True
    if isinstance(cause, Ignored):
        assert cause.reason.strip()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event=inputs, parser=st.sampled_from(PARSERS))
def test_no_parser_raises_on_arbitrary_json(event: object, parser: Callable[[object], BaseModel]) -> None:
    _check(parser(event))


@settings(max_examples=200, deadline=None)
@given(body=json_values | st.text() | st.binary(max_size=40), is_base64=json_values, headers=json_values)
def test_relay_http_never_raises(body: object, is_base64: object, headers: object) -> None:
    _check(_relay_http(body=body, is_base64=is_base64, headers=headers))


@settings(max_examples=200, deadline=None)
@given(
    attributes=st.dictionaries(
        st.sampled_from(["ce-specversion", "ce-id", "ce-type", "ce-source", "ce-time", "ce-", "other"]),
        st.text(max_size=20),
    ),
    body=st.text(max_size=40),
)
def test_binary_mode_headers_never_raise(attributes: dict[str, str], body: str) -> None:
    _check(_relay_http(body=body, is_base64=False, headers=attributes))


def test_deeply_nested_json_is_ignored_not_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for parser in PARSERS:
        assert isinstance(parser(deep), Ignored)
