"""Relay intake: each CloudEvent type in events/k8s/ becomes its cause; binary mode is refused and
broken events are ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.intake.causes import Cause, ClaimDeleted, Compact, Ignored, NodeChanged, Reconcile
from gpupool.core.intake.envelope import HttpRequest
from gpupool.core.intake.relay import intake_cloudevent, intake_relay_request
from gpupool.core.vocabulary.events import RELAY_TYPES, TYPE_PREFIX

EVENTS = Path(__file__).resolve().parents[3] / "events" / "k8s"


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


def intake_relay_http(*, body: str, headers: dict[str, str], method: str | None = "POST") -> Cause:
    return intake_relay_request(HttpRequest(method=method, headers=headers, body=body.encode()))


EXPECTED = {
    "pod-unschedulable": Reconcile(
        pool="pool-a", trigger="pod.unschedulable", event_id="relay-0001-pod-unschedulable"
    ),
    "pool-changed": Reconcile(pool="pool-a", trigger="pool.changed", event_id="relay-0002-pool-changed"),
    "cluster-changed": Reconcile(trigger="cluster.changed", event_id="relay-0003-cluster-changed"),
    "node-joined": NodeChanged(
        node="ip-10-0-1-23.ec2.internal",
        change="joined",
        claim="pool-a-claim-x7k2p",
        event_id="relay-0004-node-joined",
    ),
    "node-ready": NodeChanged(
        node="ip-10-0-1-23.ec2.internal",
        change="ready",
        claim="pool-a-claim-x7k2p",
        event_id="relay-0005-node-ready",
    ),
    "node-deleted": NodeChanged(
        node="ip-10-0-1-23.ec2.internal",
        change="deleted",
        claim="pool-a-claim-x7k2p",
        event_id="relay-0006-node-deleted",
    ),
    "claim-deleted": ClaimDeleted(claim="pool-a-claim-x7k2p", event_id="relay-0007-claim-deleted"),
    "pool-manual-compaction": Compact(
        pool="pool-a", manual=True, event_id="relay-0008-pool-manual-compaction"
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_structured_cloudevent_becomes_its_cause(name: str) -> None:
    assert intake_cloudevent(sample(name)) == EXPECTED[name]


def test_every_relay_type_has_a_sample() -> None:
    assert {sample(path.stem)["type"] for path in EVENTS.glob("*.json")} == set(RELAY_TYPES)
    assert {path.stem for path in EVENTS.glob("*.json")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_binary_mode_is_refused_with_no_event_id(name: str) -> None:
    """Issue 33, attempt 5: ce-* headers are not signed; keyed on ce-id, one signed body was acted
    on three times. Refused, and with no id the ledger is never consulted."""
    event = sample(name)
    headers = {f"Ce-{key}": value for key, value in event.items() if key not in ("data", "datacontenttype")}
    headers["Content-Type"] = "application/json"
    cause = intake_relay_http(body=json.dumps(event["data"]), headers=headers)
    assert isinstance(cause, Ignored) and "binary-mode CloudEvents are refused" in cause.reason
    assert cause.event_id is None


def test_a_structured_event_beside_ce_headers_is_refused_too() -> None:
    cause = intake_relay_http(body=json.dumps(sample("pool-changed")), headers={"ce-id": "other"})
    assert isinstance(cause, Ignored) and cause.event_id is None


def test_node_without_claim_label_is_read() -> None:
    event = sample("node-joined")
    del event["data"]["claim"]
    cause = intake_cloudevent(event)
    assert isinstance(cause, NodeChanged)
    assert cause.claim is None


def _changed(name: str, **changes: object) -> dict[str, Any]:
    event = sample(name)
    for key, value in changes.items():
        if key.startswith("data_"):
            event["data"][key[5:]] = value
        else:
            event[key] = value
    return event


BROKEN: list[tuple[str, object, str]] = [
    (
        "unknown type",
        _changed("pool-changed", type=TYPE_PREFIX + "pool.exploded"),
        "unknown relay event type",
    ),
    ("foreign type", _changed("pool-changed", type="com.example.thing"), "unknown relay event type"),
    ("specversion 0.3", _changed("pool-changed", specversion="0.3"), "specversion"),
    ("empty id", _changed("pool-changed", id=""), "id"),
    ("bad time", _changed("pool-changed", time="yesterday"), "time"),
    ("data not an object", _changed("pool-changed", data=[1]), "data is not a JSON object"),
    ("data missing", {k: v for k, v in sample("pool-changed").items() if k != "data"}, "data"),
    ("pool missing", _changed("pool-manual-compaction", data={"requestedAt": "x"}), "pool"),
    ("pool not text", _changed("pool-changed", data_pool=3), "pool"),
    ("empty node", _changed("node-ready", data_node=""), "node"),
    ("claim missing", _changed("claim-deleted", data={}), "claim"),
    ("pod without namespace", _changed("pod-unschedulable", data={"name": "p"}), "namespace"),
    ("cluster missing", _changed("cluster-changed", data={}), "cluster"),
    ("not an object", "[]", "not a JSON object"),
]


@pytest.mark.parametrize(("label", "event", "reason_part"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_cloudevent_is_ignored_with_a_reason(label: str, event: object, reason_part: str) -> None:
    cause = intake_cloudevent(event)
    assert isinstance(cause, Ignored), label
    assert reason_part in cause.reason


def test_ignored_keeps_the_event_id_when_it_could_be_read() -> None:
    cause = intake_cloudevent(_changed("pool-changed", type="x.y"))
    assert isinstance(cause, Ignored)
    assert cause.event_id == "relay-0002-pool-changed"


def test_binary_mode_with_a_non_json_body_is_ignored() -> None:
    cause = intake_relay_http(body="nope", headers={"ce-specversion": "1.0", "ce-id": "e1"})
    assert isinstance(cause, Ignored)
    assert cause.event_id is None
