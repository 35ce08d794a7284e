"""Events as kube-apiserver serves them to kubectl: the printer columns, times, selectors and
the namespace rule.

Covers, each against upstream's source (pkg/printers/internalversion printEvent, apimachinery's
duration.HumanDuration, pkg/registry/core/event ToSelectableFields, legacyValidateEvent):
`kubectl get events` prints LAST SEEN, TYPE, REASON, OBJECT, MESSAGE and `-o wide` adds
SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME; each cell's fallbacks (no lastTimestamp: the first
seen; no firstTimestamp: eventTime; a series' count and time; count 0 prints 1; the source's
reportingComponent and instance); an events.k8s.io/v1 Event prints from its own field names;
HumanDuration branch by branch; the `source` and `involvedObject.resourceVersion` field
selectors; and an Event outside its object's namespace is 422 Invalid and not stored. Skips
the kubectl part where kubectl is not installed.
"""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from kubeapi_builders import http_call

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock
from gpupool.sandbox.kubeapi.printers import human_duration
from tests.programs import program_path

KUBECTL = program_path("kubectl")
EVENTS = "/api/v1/namespaces/default/events"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
WIDE_HEADER = ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST", "SEEN"]
WIDE_HEADER += ["COUNT", "NAME"]
COLUMNS = [
    "Last Seen",
    "Type",
    "Reason",
    "Object",
    "Subobject",
    "Source",
    "Message",
    "First Seen",
    "Count",
    "Name",
]


def _stamp(clock: ManualClock, seconds_ago: int) -> str:
    return (clock.now() - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _event(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUNodeClaim", "name": "claim-a"},
        "reason": "ManagedNodeCreated",
        "message": "  node joined  ",
        "type": "Normal",
        **fields,
    }


def _rows(api: EmbeddedKubeAPI, path: str = EVENTS) -> dict[str, dict[str, Any]]:
    status, table, _ = http_call(api.port, "GET", path, accept=TABLE)
    assert status == 200, table
    names = [c["name"] for c in table["columnDefinitions"]]
    return {row["cells"][-1]: dict(zip(names, row["cells"], strict=True)) for row in table["rows"]}


def test_the_table_has_upstreams_event_columns(kube_api: EmbeddedKubeAPI, clock: ManualClock) -> None:
    created = _event(
        "e1",
        firstTimestamp=_stamp(clock, 300),
        lastTimestamp=_stamp(clock, 30),
        count=3,
        source={"component": "gpupool"},
        reportingInstance="launch-1",
    )
    assert http_call(kube_api.port, "POST", EVENTS, created)[0] == 201
    status, table, _ = http_call(kube_api.port, "GET", EVENTS, accept=TABLE)
    assert status == 200
    definitions = table["columnDefinitions"]
    assert [c["name"] for c in definitions] == COLUMNS
    assert [c["name"] for c in definitions if c["priority"] == 0] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Message",
    ]
    row = _rows(kube_api)["e1"]
    assert row == {
        "Last Seen": "30s",
        "Type": "Normal",
        "Reason": "ManagedNodeCreated",
        "Object": "gpunodeclaim/claim-a",
        "Subobject": "",
        "Source": "gpupool, launch-1",
        "Message": "node joined",
        "First Seen": "5m",
        "Count": 3,
        "Name": "e1",
    }


def test_each_cell_falls_back_as_upstream(kube_api: EmbeddedKubeAPI, clock: ManualClock) -> None:
    no_last = _event("no-last", firstTimestamp=_stamp(clock, 90), reportingComponent="karpenter")
    only_event_time = _event(
        "event-time",
        eventTime=(clock.now() - timedelta(seconds=45)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        reportingComponent="gpupool",
        reportingInstance="bind",
        involvedObject={"kind": "Node"},
    )
    series = _event(
        "series",
        firstTimestamp=_stamp(clock, 3600),
        count=2,
        series={"count": 7, "lastObservedTime": (clock.now() - timedelta(seconds=10)).isoformat()},
    )
    for event in (no_last, only_event_time, series):
        assert http_call(kube_api.port, "POST", EVENTS, event)[0] == 201, event
    rows = _rows(kube_api)
    assert (rows["no-last"]["Last Seen"], rows["no-last"]["First Seen"]) == ("90s", "90s")
    assert rows["no-last"]["Count"] == 1  # count 0: a singleton
    assert rows["no-last"]["Source"] == "karpenter"
    assert (rows["event-time"]["First Seen"], rows["event-time"]["Last Seen"]) == ("45s", "45s")
    assert rows["event-time"]["Object"] == "node"  # no name: the kind alone
    assert rows["event-time"]["Source"] == "gpupool, bind"
    assert (rows["series"]["Last Seen"], rows["series"]["Count"], rows["series"]["First Seen"]) == (
        "10s",
        7,
        "60m",
    )


def test_an_events_k8s_io_event_prints_from_its_own_fields(
    kube_api: EmbeddedKubeAPI, clock: ManualClock
) -> None:
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "new"},
        "eventTime": (clock.now() - timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "regarding": {"kind": "Pod", "name": "w1", "namespace": "default"},
        "note": "pending",
        "reason": "NoOffering",
        "type": "Warning",
        "action": "Launch",
        "reportingController": "gpupool",
        "reportingInstance": "launch",
        "deprecatedCount": 4,
    }
    assert http_call(kube_api.port, "POST", path, event)[0] == 201
    row = _rows(kube_api, path)["new"]
    assert (row["Object"], row["Message"], row["Source"], row["Count"], row["Last Seen"]) == (
        "pod/w1",
        "pending",
        "gpupool, launch",
        4,
        "20s",
    )


@pytest.mark.parametrize(
    ("seconds", "printed"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 5 * 60, "3h5m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (731 * 86400, "2y1d"),
        (8 * 365 * 86400, "8y"),
    ],
)
def test_durations_print_as_upstreams_human_duration(seconds: int, printed: str) -> None:
    assert human_duration(seconds) == printed


def test_source_and_resource_version_are_selectable(kube_api: EmbeddedKubeAPI) -> None:
    first = _event(
        "a",
        source={"component": "kubelet"},
        involvedObject={"kind": "Node", "name": "n1", "resourceVersion": "7"},
    )
    second = _event("b", reportingComponent="gpupool", involvedObject={"kind": "Node", "name": "n1"})
    for event in (first, second):
        assert http_call(kube_api.port, "POST", EVENTS, event)[0] == 201

    def names(selector: str) -> list[str]:
        status, listed, _ = http_call(kube_api.port, "GET", f"{EVENTS}?fieldSelector={quote(selector)}")
        assert status == 200, listed
        return sorted(item["metadata"]["name"] for item in listed["items"])

    assert names("source=kubelet") == ["a"]
    assert names("source=gpupool") == ["b"]  # no source.component: the reporting component
    assert names("involvedObject.resourceVersion=7") == ["a"]
    assert names("reportingComponent=gpupool") == ["b"]


@pytest.mark.parametrize(
    ("namespace", "involved", "fields", "allowed"),
    [
        ("default", "", {}, True),
        ("kube-system", "", {}, False),  # cluster-scoped object, no eventTime: default only
        ("kube-system", "", {"eventTime": "2026-03-01T12:00:00.000000Z"}, True),
        ("ml", "", {"eventTime": "2026-03-01T12:00:00.000000Z"}, False),
        ("ml", "ml", {}, True),
        ("default", "ml", {}, False),  # a namespaced object's Event lives in its namespace
    ],
)
def test_an_event_lives_in_its_objects_namespace(
    kube_api: EmbeddedKubeAPI, namespace: str, involved: str, fields: dict[str, Any], allowed: bool
) -> None:
    for name in ("ml", "kube-system"):
        http_call(kube_api.port, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    event = _event("e", **fields)
    event["metadata"]["namespace"] = namespace
    if involved:
        event["involvedObject"] = {"kind": "Pod", "name": "w1", "namespace": involved}
    path = f"/api/v1/namespaces/{namespace}/events"
    status, body, _ = http_call(kube_api.port, "POST", path, event)
    if allowed:
        assert status == 201, body
        return
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "involvedObject.namespace"
    assert http_call(kube_api.port, "GET", f"{path}/e")[0] == 404


@pytest.mark.usefixtures("needs_kubectl")
def test_kubectl_get_events_prints_kubectls_columns(
    kube_api: EmbeddedKubeAPI, clock: ManualClock, tmp_path: Path
) -> None:
    assert KUBECTL is not None
    event = _event("e1", firstTimestamp=_stamp(clock, 120), lastTimestamp=_stamp(clock, 60), count=2)
    assert http_call(kube_api.port, "POST", EVENTS, event)[0] == 201
    env = {"KUBECONFIG": str(kube_api.kubeconfig_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def kubectl(*args: str) -> list[str]:
        done = subprocess.run(
            [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    plain = kubectl("get", "events")
    assert plain[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert plain[1].split() == [
        "60s",
        "Normal",
        "ManagedNodeCreated",
        "gpunodeclaim/claim-a",
        "node",
        "joined",
    ]
    wide = kubectl("get", "events", "-o", "wide")
    assert wide[0].split() == WIDE_HEADER
    assert wide[1].split()[-3:] == ["2m", "2", "e1"]
