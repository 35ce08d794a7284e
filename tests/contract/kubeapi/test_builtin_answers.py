"""Built-in kinds answered as kube-apiserver 1.36 answers them, where the API server differential
(benchmarks/kubeapi_differential.py) found the sandbox otherwise: the fields Go always writes for a
core/v1 or events.k8s.io Event and a Node, Node `allocatable` defaulted from `capacity`, an
events.k8s.io Event's refusal naming the core Event, a ConfigMap key's refusal in full."""

from __future__ import annotations

from kubeapi_builders import http_call

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

EVENT = {
    "metadata": {"name": "e"},
    "involvedObject": {"kind": "Node", "name": "n1"},
    "reason": "R",
    "message": "m",
    "type": "Normal",
}


def test_a_core_event_carries_what_go_always_writes(kube_api: EmbeddedKubeAPI) -> None:
    status, event, _ = http_call(kube_api.port, "POST", "/api/v1/namespaces/default/events", EVENT)
    assert status == 201
    assert (event["eventTime"], event["firstTimestamp"], event["lastTimestamp"]) == (None, None, None)
    assert (event["reportingComponent"], event["reportingInstance"], event["source"]) == ("", "", {})


def test_an_events_v1_event_carries_its_deprecated_fields_and_is_refused_as_a_core_event(
    kube_api: EmbeddedKubeAPI,
) -> None:
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    series = {
        "metadata": {"name": "s"},
        "eventTime": "2026-03-01T12:00:00.000000Z",
        "reportingController": "gpupool.dev/relay",
        "reportingInstance": "relay-0",
        "action": "Expand",
        "reason": "R",
        "regarding": {"kind": "Node", "name": "n1"},
        "type": "Normal",
    }
    status, event, _ = http_call(kube_api.port, "POST", path, series)
    assert status == 201
    assert (
        event["deprecatedSource"],
        event["deprecatedFirstTimestamp"],
        event["deprecatedLastTimestamp"],
    ) == (
        {},
        None,
        None,
    )
    status, refused, _ = http_call(
        kube_api.port, "POST", path, {**series, "metadata": {"name": "t"}, "eventTime": None}
    )
    assert status == 422 and refused["message"] == 'Event "t" is invalid: eventTime: Required value'
    assert "group" not in refused["details"]


def test_a_node_status_is_written_as_go_writes_it(kube_api: EmbeddedKubeAPI) -> None:
    node = {"metadata": {"name": "n1"}, "status": {"capacity": {"nvidia.com/gpu": "4"}}}
    status, created, _ = http_call(kube_api.port, "POST", "/api/v1/nodes", node)
    assert status == 201
    assert created["status"]["allocatable"] == {"nvidia.com/gpu": "4"}
    assert created["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert created["status"]["nodeInfo"]["kubeletVersion"] == "" and len(created["status"]["nodeInfo"]) == 10


def test_a_bad_config_map_key_is_refused_in_upstreams_words(kube_api: EmbeddedKubeAPI) -> None:
    body = {"metadata": {"name": "c"}, "data": {"a b": "1"}}
    status, refused, _ = http_call(kube_api.port, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert (status, refused["details"]["causes"][0]["message"]) == (
        422,
        "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
        "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    )
