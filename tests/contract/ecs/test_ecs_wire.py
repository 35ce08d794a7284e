"""The sandbox ECS endpoint as the SDK sees it, and the adapter's error handling on top of it.

Covers: flattened parameters are rebuilt (`unflatten`); an unsigned request, an unknown access
key and a wrong API version are refused with ECS's error shape; ECS error codes reach the
adapter as the domain errors of the table (NoStock → capacity, Throttling / ServiceUnavailable
→ retried then Throttled, InvalidParameter / Forbidden.RAM → permanent with the message, a dead
endpoint → Throttled); a repeated ClientToken returns the same instance, and
IdempotentParameterMismatch adopts the claim's instance; instances go Pending → Starting →
Running → Stopped on the fake's clock; DescribeInstances pages past 100.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupool.adapters.alibaba.errors import ErrorKind, classify
from gpupool.sandbox.ecs_server import EcsEndpoint, unflatten
from gpupool.sandbox.ecs_state import EcsState
from gpupool.service.errors import CapacityUnavailable, PermanentError, Throttled

from .conftest import GN7I, InMemoryEcsApi, compute_on, full_class, make_claim, make_offering, sdk_api


def test_flattened_parameters_are_rebuilt() -> None:
    pairs = [
        ("Tag.2.Key", "b"),
        ("Tag.1.Key", "a"),
        ("Tag.1.Value", "x"),
        ("SystemDisk.Size", "40"),
        ("InstanceId.1", "i-1"),
        ("ImageId", "m-1"),
    ]
    assert unflatten(pairs) == {
        "Tag": [{"Key": "a", "Value": "x"}, {"Key": "b"}],
        "SystemDisk": {"Size": "40"},
        "InstanceId": ["i-1"],
        "ImageId": "m-1",
    }


def _post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{url}/?RegionId=cn-hangzhou", data=b"", headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"x-acs-action": "DescribeInstances", "x-acs-version": "2014-05-26"}, "IncompleteSignature"),
        (
            {
                "x-acs-action": "DescribeInstances",
                "x-acs-version": "2014-05-26",
                "authorization": "ACS3-HMAC-SHA256 Credential=stolen,Signature=00",
            },
            "InvalidAccessKeyId.NotFound",
        ),
        (
            {
                "x-acs-action": "DescribeInstances",
                "x-acs-version": "2016-04-28",
                "authorization": "ACS3-HMAC-SHA256 Credential=sandbox-access-key-id,Signature=00",
            },
            "InvalidVersion",
        ),
    ],
    ids=["unsigned", "unknown key", "wrong version"],
)
def test_bad_requests_are_refused_in_ecs_error_shape(
    endpoint: EcsEndpoint, headers: dict[str, str], code: str
) -> None:
    status, body = _post(endpoint.url, headers)
    assert status >= 400 and body["Code"] == code and body["Message"] and "RequestId" in body
    assert endpoint.state.calls == []


def test_an_unknown_access_key_is_a_permanent_error_through_the_sdk(endpoint: EcsEndpoint) -> None:
    with pytest.raises(PermanentError, match=r"InvalidAccessKeyId\.NotFound"):
        compute_on(sdk_api(endpoint, access_key_id="someone-else")).list_managed()


def test_throttling_is_retried_then_surfaces_as_throttled(endpoint: EcsEndpoint) -> None:
    compute = compute_on(sdk_api(endpoint))
    endpoint.state.inject("DescribeInstances", "Throttling.User", times=2)
    assert compute.list_managed() == []
    endpoint.state.inject("DescribeInstances", "ServiceUnavailable", times=10)
    with pytest.raises(Throttled, match="ServiceUnavailable"):
        compute.list_managed()


def test_permanent_codes_keep_their_message(endpoint: EcsEndpoint) -> None:
    compute = compute_on(sdk_api(endpoint))
    endpoint.state.inject("RunInstances", "Forbidden.RAM")
    with pytest.raises(PermanentError, match=r"Forbidden\.RAM"):
        compute.launch(make_claim(), full_class(endpoint.state), make_offering(), client_token="t")
    missing_image = full_class(endpoint.state, osImageSelectorTerms=[{"id": "m-gone"}])
    with pytest.raises(PermanentError, match=r"InvalidImageId\.NotFound"):
        compute.launch(make_claim(), missing_image, make_offering(), client_token="t")
    assert endpoint.state.live() == []


def test_a_dead_endpoint_is_retryable() -> None:
    with EcsEndpoint() as endpoint:
        api = sdk_api(endpoint)
    with pytest.raises(Throttled):
        compute_on(api).list_managed()


def test_no_stock_only_for_the_named_zone(endpoint: EcsEndpoint) -> None:
    compute = compute_on(sdk_api(endpoint))
    endpoint.state.no_stock({GN7I}, zones={"cn-hangzhou-i"})
    with pytest.raises(CapacityUnavailable, match=r"OperationDenied\.NoStock"):
        compute.launch(make_claim(), full_class(endpoint.state), make_offering(), client_token="a")
    other = make_offering(zone="cn-hangzhou-h")
    assert compute.launch(
        make_claim(zone="cn-hangzhou-h"), full_class(endpoint.state), other, client_token="b"
    )


def test_a_repeated_client_token_returns_the_same_instance_and_a_mismatch_adopts(
    endpoint: EcsEndpoint,
) -> None:
    compute = compute_on(sdk_api(endpoint))
    node_class = full_class(endpoint.state)
    first = compute.launch(make_claim(), node_class, make_offering(), client_token="uid-1")
    assert compute.launch(make_claim(), node_class, make_offering(), client_token="uid-1") == first
    moved = make_offering(zone="cn-hangzhou-h")
    assert compute.launch(make_claim(), node_class, moved, client_token="uid-1") == first
    assert [instance.instance_id for instance in endpoint.state.live()] == [first]
    with pytest.raises(PermanentError, match="IdempotentParameterMismatch"):
        compute.launch(make_claim("another"), node_class, make_offering(), client_token="uid-1")


def test_instances_follow_the_ecs_lifecycle() -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    state = EcsState(now=lambda: now[0], pending_for=timedelta(seconds=1), starting_for=timedelta(seconds=2))
    compute = compute_on(InMemoryEcsApi(state))
    instance_id = compute.launch(make_claim(), full_class(state), make_offering(), client_token="t")

    def status() -> str:
        return str(
            state.call("DescribeInstances", {"RegionId": state.region})["Instances"]["Instance"][0]["Status"]
        )

    seen = []
    for _ in range(4):
        seen.append((status(), compute.describe([instance_id])[0].state))
        now[0] += timedelta(seconds=1)
    state.stop(instance_id)
    seen.append((status(), compute.describe([instance_id])[0].state))
    assert seen == [
        ("Pending", "pending"),
        ("Starting", "pending"),
        ("Starting", "pending"),
        ("Running", "running"),
        ("Stopped", "stopped"),
    ]


def test_describe_pages_past_one_hundred() -> None:
    state = EcsState()
    compute = compute_on(InMemoryEcsApi(state))
    node_class = full_class(state)
    launched = {
        compute.launch(make_claim(f"c{index}"), node_class, make_offering(), client_token=f"t{index}")
        for index in range(120)
    }
    assert {item.instance_id for item in compute.list_managed()} == launched
    assert {item.instance_id for item in compute.describe(sorted(launched))} == launched


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("OperationDenied.NoStock", 403, ErrorKind.CAPACITY),
        ("InvalidResourceType.NotSupported", 400, ErrorKind.CAPACITY),
        ("Throttling.User", 400, ErrorKind.THROTTLED),
        ("Throttling", 400, ErrorKind.THROTTLED),
        ("ServiceUnavailable", 503, ErrorKind.THROTTLED),
        ("InvalidParameter.Mismatch", 400, ErrorKind.PERMANENT),
        ("Forbidden.RAM", 403, ErrorKind.PERMANENT),
        ("IdempotentParameterMismatch", 400, ErrorKind.PERMANENT),
        ("InvalidInstanceId.NotFound", 404, ErrorKind.NOT_FOUND),
        ("SomethingNew", 500, ErrorKind.THROTTLED),
        ("SomethingNew", 400, ErrorKind.PERMANENT),
        ("", 0, ErrorKind.THROTTLED),
    ],
)
def test_the_error_table(code: str, status: int, kind: ErrorKind) -> None:
    assert classify(code, status) is kind
