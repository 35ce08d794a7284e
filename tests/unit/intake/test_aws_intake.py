"""AWS intake: every sample event in events/aws/ becomes the expected cause, and broken ones are Ignored."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.intake.aws import DETAIL_TYPES, intake_aws, is_function_url
from gpupool.core.intake.causes import (
    ClaimDeleted,
    Compact,
    Ignored,
    InstanceInterruption,
    InstanceStateChanged,
    NodeChanged,
    Reconcile,
    Sweep,
)
from gpupool.core.intake.routing import FunctionName

EVENTS = Path(__file__).resolve().parents[3] / "events" / "aws"


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


CASES: list[tuple[str, FunctionName, object]] = [
    (
        "scheduled-event",
        "launch",
        Reconcile(trigger="schedule:aws.events", event_id="6a7e8feb-b491-4cf7-a9f1-bf3703467718"),
    ),
    (
        "scheduler-without-input",
        "bind",
        Sweep(event_id="b3c5a0f2-7f6e-4b54-9a1d-2c8a3e1f0d11"),
    ),
    (
        "scheduler-without-input",
        "compact",
        Compact(event_id="b3c5a0f2-7f6e-4b54-9a1d-2c8a3e1f0d11"),
    ),
    (
        "scheduler-with-input",
        "launch",
        Reconcile(
            pool="pool-a", trigger="schedule:aws.scheduler", event_id="c9e1d7a4-2b3f-4c6d-8e9f-0a1b2c3d4e5f"
        ),
    ),
    (
        "ec2-state-change-running",
        "bind",
        InstanceStateChanged(
            instance_id="i-0abc123def4567890",
            state="running",
            event_id="7bf73129-1428-4cd3-a780-95db273d1602",
        ),
    ),
    (
        "ec2-state-change-terminated",
        "bind",
        InstanceStateChanged(
            instance_id="i-0abc123def4567890",
            state="terminated",
            event_id="8c0a4b2e-3d5f-4e6a-9b7c-1d2e3f4a5b6c",
        ),
    ),
    (
        "ec2-state-change-stopping",
        "bind",
        InstanceStateChanged(
            instance_id="i-0abc123def4567890",
            state="stopping",
            event_id="9d1b5c3f-4e6a-4f7b-8c9d-2e3f4a5b6c7d",
        ),
    ),
    (
        "ec2-spot-interruption-warning",
        "launch",
        InstanceInterruption(
            instance_id="i-0abc123def4567890",
            reason="spot-interruption",
            event_id="1e5527d7-bb36-4607-3370-4164db56a40e",
        ),
    ),
    (
        "ec2-rebalance-recommendation",
        "launch",
        InstanceInterruption(
            instance_id="i-0abc123def4567890",
            reason="rebalance-recommendation",
            event_id="2f6638e8-cc47-4718-8481-5275ec67b51f",
        ),
    ),
    (
        "function-url-pod-unschedulable",
        "launch",
        Reconcile(pool="pool-a", trigger="pod.unschedulable", event_id="relay-0001-pod-unschedulable"),
    ),
    (
        "function-url-pool-changed",
        "launch",
        Reconcile(pool="pool-a", trigger="pool.changed", event_id="relay-0002-pool-changed"),
    ),
    (
        "function-url-cluster-changed",
        "launch",
        Reconcile(pool=None, trigger="cluster.changed", event_id="relay-0003-cluster-changed"),
    ),
    (
        "function-url-node-joined",
        "bind",
        NodeChanged(
            node="ip-10-0-1-23.ec2.internal",
            change="joined",
            claim="pool-a-claim-x7k2p",
            event_id="relay-0004-node-joined",
        ),
    ),
    (
        "function-url-node-ready",
        "bind",
        NodeChanged(
            node="ip-10-0-1-23.ec2.internal",
            change="ready",
            claim="pool-a-claim-x7k2p",
            event_id="relay-0005-node-ready",
        ),
    ),
    (
        "function-url-node-deleted",
        "bind",
        NodeChanged(
            node="ip-10-0-1-23.ec2.internal",
            change="deleted",
            claim="pool-a-claim-x7k2p",
            event_id="relay-0006-node-deleted",
        ),
    ),
    (
        "function-url-claim-deleted",
        "bind",
        ClaimDeleted(claim="pool-a-claim-x7k2p", event_id="relay-0007-claim-deleted"),
    ),
    (
        "function-url-pool-manual-compaction",
        "compact",
        Compact(pool="pool-a", manual=True, event_id="relay-0008-pool-manual-compaction"),
    ),
]


@pytest.mark.parametrize(("name", "function", "expected"), CASES, ids=[f"{c[0]}->{c[1]}" for c in CASES])
def test_sample_becomes_its_cause(name: str, function: FunctionName, expected: object) -> None:
    assert intake_aws(sample(name), function=function).cause == expected


def test_every_aws_sample_is_covered_and_carries_its_version() -> None:
    names = {path.stem for path in EVENTS.glob("*.json")}
    assert names == {case[0] for case in CASES}
    for name in names:
        event = sample(name)
        assert event["version"] == ("2.0" if is_function_url(event) else "0"), name


def test_every_detail_type_has_a_sample() -> None:
    seen = {
        (event["source"], event["detail-type"])
        for event in map(sample, (path.stem for path in EVENTS.glob("*.json")))
        if not is_function_url(event)
    }
    assert seen == set(DETAIL_TYPES)


def test_a_cause_for_another_function_is_ignored_naming_the_right_one() -> None:
    cause = intake_aws(sample("ec2-spot-interruption-warning"), function="bind").cause
    assert isinstance(cause, Ignored)
    assert "launch" in cause.reason
    assert cause.event_id == "1e5527d7-bb36-4607-3370-4164db56a40e"


def _with(name: str, path: tuple[str, ...], value: object) -> dict[str, Any]:
    event = copy.deepcopy(sample(name))
    target = event
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return event


_DELETE = object()

BROKEN: list[tuple[str, object, str]] = [
    ("not an object", [1, 2], "not a JSON object"),
    ("not JSON text", "{oops", "not a JSON object"),
    ("no id", _with("scheduled-event", ("id",), _DELETE), "id"),
    ("no detail-type", _with("scheduled-event", ("detail-type",), _DELETE), "detail-type"),
    (
        "unknown detail-type",
        _with("scheduled-event", ("detail-type",), "AWS API Call via CloudTrail"),
        "no converter",
    ),
    ("unknown source", _with("ec2-state-change-running", ("source",), "aws.autoscaling"), "no converter"),
    ("state missing", _with("ec2-state-change-running", ("detail", "state"), _DELETE), "state"),
    ("unknown state", _with("ec2-state-change-running", ("detail", "state"), "melting"), "state"),
    (
        "no instance id",
        _with("ec2-spot-interruption-warning", ("detail", "instance-id"), _DELETE),
        "instance-id",
    ),
    (
        "empty instance id",
        _with("ec2-rebalance-recommendation", ("detail", "instance-id"), ""),
        "instance-id",
    ),
    ("detail a list", _with("ec2-rebalance-recommendation", ("detail",), [1]), "detail"),
    ("scheduler detail not JSON", _with("scheduler-without-input", ("detail",), "{"), "detail"),
    ("schedule pool not a string", _with("scheduler-with-input", ("detail", "pool"), 7), "pool"),
    ("URL body not JSON", _with("function-url-node-ready", ("body",), "<html>"), "not a JSON object"),
    ("URL body missing", _with("function-url-node-ready", ("body",), _DELETE), "not a JSON object"),
    ("URL GET", _with("function-url-node-ready", ("requestContext", "http", "method"), "GET"), "POST"),
    (
        "URL bad base64",
        {**sample("function-url-node-ready"), "isBase64Encoded": True, "body": "%%%"},
        "UTF-8",
    ),
]


@pytest.mark.parametrize(("label", "event", "reason_part"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_event_is_ignored_with_a_reason(label: str, event: object, reason_part: str) -> None:
    cause = intake_aws(event, function="bind").cause
    assert isinstance(cause, Ignored), label
    assert reason_part in cause.reason


def test_base64_function_url_body_is_decoded() -> None:
    import base64

    event = sample("function-url-node-ready")
    event["body"] = base64.b64encode(event["body"].encode()).decode()
    event["isBase64Encoded"] = True
    assert isinstance(intake_aws(event, function="bind").cause, NodeChanged)


def test_event_as_bytes_is_read() -> None:
    raw = (EVENTS / "ec2-state-change-running.json").read_bytes()
    assert isinstance(intake_aws(raw, function="bind").cause, InstanceStateChanged)


def _trigger_of_sample(name: str) -> str:
    if name.startswith("function-url-"):
        return "http"
    return "schedule" if name.startswith("schedule") else "eventbridge"


def test_intake_tells_each_samples_trigger_kind_and_carries_the_request_of_http_ones() -> None:
    for path in EVENTS.glob("*.json"):
        intake = intake_aws(sample(path.stem), function="bind")
        assert intake.trigger == _trigger_of_sample(path.stem), path.name
        assert (intake.request is not None) == (intake.trigger == "http"), path.name
    assert intake_aws("{oops").trigger == "unknown"


def test_a_function_url_body_is_decoded_once_for_the_signature_and_the_parser() -> None:
    import base64

    event = sample("function-url-node-ready")
    sent = event["body"].encode()
    event["body"] = base64.b64encode(sent).decode()
    event["isBase64Encoded"] = True
    intake = intake_aws(event, function="bind")
    assert intake.request is not None and intake.request.body == sent
    assert isinstance(intake.cause, NodeChanged)
