"""The EC2 error table as the adapter applies it, with botocore's Stubber and small fake clients.

Covers: every code in `ERROR_TABLE` reaches the service as the intended domain error; throttling
is retried with bounded exponential backoff, then `Throttled`; prefixes and HTTP-status
fallbacks; connection errors are retryable; the oldest of duplicate instances is adopted; and
the RunInstances request details moto cannot show (GiB rounding, spot price, reserved, ARNs).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError, ParamValidationError
from botocore.stub import Stubber

from gpupool.adapters.aws.compute import Ec2Compute, RetryPolicy
from gpupool.adapters.aws.errors import ERROR_TABLE, ErrorKind, classify
from gpupool.adapters.aws.request import ResolvedNetwork, run_instances_request
from gpupool.adapters.aws.session import aws_session
from gpupool.service.errors import (
    CapacityUnavailable,
    DomainError,
    NotFound,
    PermanentError,
    Throttled,
)

from .conftest import make_claim, make_class, make_offering

EXPECTED: dict[ErrorKind, type[DomainError]] = {
    ErrorKind.CAPACITY: CapacityUnavailable,
    ErrorKind.THROTTLED: Throttled,
    ErrorKind.PERMANENT: PermanentError,
    ErrorKind.NOT_FOUND: NotFound,
}
IMAGE_ONLY = {"osImageSelectorTerms": [{"id": "ami-0123456789abcdef0"}]}


def _stubbed() -> tuple[Any, Stubber]:
    # As the functions make it (the shipped cut of EC2's model): the Stubber checks each request
    # against that model.
    session = aws_session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    client = session.client("ec2")
    return client, Stubber(client)


def _compute(client: Any, sleeps: list[float]) -> Ec2Compute:
    return Ec2Compute(client, cluster="demo", sleep=sleeps.append, retry=RetryPolicy(attempts=3))


def _launch(compute: Ec2Compute) -> str:
    return compute.launch(make_claim(), make_class(**IMAGE_ONLY), make_offering(), client_token="tok")


def _status_for(kind: ErrorKind) -> int:
    return 503 if kind is ErrorKind.THROTTLED else 400


@pytest.mark.parametrize("code", sorted(ERROR_TABLE))
def test_run_instances_error_codes_map_through_the_table(code: str) -> None:
    kind = ERROR_TABLE[code]
    client, stubber = _stubbed()
    calls = 3 if kind is ErrorKind.THROTTLED else 1
    for _ in range(calls):
        stubber.add_client_error(
            "run_instances",
            service_error_code=code,
            service_message=f"msg {code}",
            http_status_code=_status_for(kind),
        )
    sleeps: list[float] = []
    with stubber, pytest.raises(DomainError) as caught:
        _launch(_compute(client, sleeps))
    assert type(caught.value) is EXPECTED[kind]
    assert caught.value.code == code
    assert f"msg {code}" in caught.value.message
    stubber.assert_no_pending_responses()
    assert sleeps == ([0.25, 0.5] if kind is ErrorKind.THROTTLED else [])


def test_capacity_error_names_the_offering() -> None:
    client, stubber = _stubbed()
    stubber.add_client_error("run_instances", service_error_code="InsufficientInstanceCapacity")
    with stubber, pytest.raises(CapacityUnavailable, match=r"g5\.xlarge/us-east-1a/OnDemand"):
        _launch(_compute(client, []))


def test_throttling_then_success_returns_the_instance() -> None:
    client, stubber = _stubbed()
    stubber.add_client_error("run_instances", service_error_code="RequestLimitExceeded", http_status_code=503)
    stubber.add_client_error("run_instances", service_error_code="Throttling", http_status_code=400)
    stubber.add_response("run_instances", {"Instances": [{"InstanceId": "i-0aaaaaaaaaaaaaaa1"}]})
    sleeps: list[float] = []
    with stubber:
        assert _launch(_compute(client, sleeps)) == "i-0aaaaaaaaaaaaaaa1"
    assert sleeps == [0.25, 0.5]


def test_backoff_is_bounded() -> None:
    policy = RetryPolicy(attempts=10, base_delay_s=0.25, max_delay_s=2.0)
    delays = [policy.delay(retry) for retry in range(8)]
    assert delays == sorted(delays)
    assert max(delays) == 2.0


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("InvalidAMIID.NotFound", 400, ErrorKind.PERMANENT),
        ("InvalidAMIID.Malformed", 400, ErrorKind.PERMANENT),
        ("InvalidGroup.NotFound", 400, ErrorKind.PERMANENT),
        ("InvalidBlockDeviceMapping", 400, ErrorKind.PERMANENT),
        ("SomethingNew", 503, ErrorKind.THROTTLED),
        ("SomethingNew", 429, ErrorKind.THROTTLED),
        ("SomethingNew", 400, ErrorKind.PERMANENT),
        ("", 0, ErrorKind.PERMANENT),
    ],
)
def test_prefixes_and_status_fallback(code: str, status: int, kind: ErrorKind) -> None:
    assert classify(code, status) is kind


class _FlakyClient:
    """Raises a connection error on every describe_instances call."""

    def __init__(self) -> None:
        self.calls = 0

    def describe_instances(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        raise EndpointConnectionError(endpoint_url="https://ec2.example")


def test_connection_errors_are_retried_then_throttled() -> None:
    client = _FlakyClient()
    sleeps: list[float] = []
    with pytest.raises(Throttled):
        _compute(client, sleeps).list_managed()
    assert client.calls == 3 and len(sleeps) == 2


class _TwoInstancesClient:
    """describe_instances returns two instances for one claim, the older one second."""

    def __init__(self) -> None:
        self.filters: list[dict[str, Any]] = []

    def describe_instances(self, **kwargs: Any) -> dict[str, Any]:
        self.filters = kwargs["Filters"]

        def instance(instance_id: str, hour: int) -> dict[str, Any]:
            return {
                "InstanceId": instance_id,
                "State": {"Name": "running"},
                "LaunchTime": datetime(2026, 1, 1, hour, tzinfo=UTC),
                "Tags": [{"Key": "tensor-fusion.ai/node-name", "Value": "c1"}],
            }

        return {
            "Reservations": [
                {"Instances": [instance("i-newer", 12)]},
                {"Instances": [instance("i-older", 9)]},
            ]
        }


def test_find_by_claim_picks_the_oldest_and_filters_by_our_tags() -> None:
    client = _TwoInstancesClient()
    found = _compute(client, []).find_by_claim(make_claim("c1"))
    assert found is not None and found.instance_id == "i-older"
    by_name = {item["Name"]: item["Values"] for item in client.filters}
    assert by_name["tag:managed-by"] == ["tensor-fusion.ai"]
    assert by_name["tag:tensor-fusion.ai/cluster"] == ["demo"]
    assert by_name["tag:tensor-fusion.ai/node-name"] == ["c1"]
    assert "terminated" not in by_name["instance-state-name"]


def _request(**overrides: Any) -> dict[str, Any]:
    claim = overrides.pop("claim", make_claim())
    offering = overrides.pop("offering", make_offering())
    token = overrides.pop("client_token", "tok")
    return run_instances_request(
        claim,
        make_class(**{**IMAGE_ONLY, **overrides}),
        offering,
        network=ResolvedNetwork(image_id="ami-1", subnet_id=None, security_group_ids=()),
        cluster="demo",
        client_token=token,
    )


@pytest.mark.parametrize(("size", "gib"), [("100Gi", 100), ("100G", 94), ("1.5Ti", 1536), ("1Mi", 1)])
def test_volume_sizes_become_whole_gib_rounded_up(size: str, gib: int) -> None:
    request = _request(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": size}}])
    assert request["BlockDeviceMappings"] == [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": gib}}]


def test_disk_without_device_name_is_permanent() -> None:
    with pytest.raises(PermanentError, match="deviceName"):
        _request(blockDeviceMappings=[{"ebs": {"volumeSize": "10Gi"}}])


@pytest.mark.parametrize("token", ["", "x" * 65, "ü"])
def test_bad_client_token_is_permanent(token: str) -> None:
    with pytest.raises(PermanentError, match="client token"):
        _request(client_token=token)


def test_spot_price_limit_and_reserved_and_profile_arn() -> None:
    spot = _request(
        claim=make_claim(extraParams={"spotPriceLimit": "0.9"}), offering=make_offering(capacity_type="Spot")
    )
    assert spot["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"] == "0.9"
    reserved = _request(offering=make_offering(capacity_type="Reserved"))
    # Never On-Demand under a Reserved claim (`open` would silently be that).
    preference = reserved["CapacityReservationSpecification"]["CapacityReservationPreference"]
    assert preference == "capacity-reservations-only"
    assert "InstanceMarketOptions" not in reserved
    arn = "arn:aws:iam::123456789012:instance-profile/gpu"
    assert _request(instanceProfile=arn)["IamInstanceProfile"] == {"Arn": arn}
    on_demand = _request()
    assert "InstanceMarketOptions" not in on_demand and on_demand["MinCount"] == on_demand["MaxCount"] == 1
    assert on_demand["ClientToken"] == "tok"


def test_a_reserved_launch_with_no_reservation_room_fails_as_capacity_so_planning_falls_back() -> None:
    """With `capacity-reservations-only` EC2 refuses the launch instead of running On-Demand; the
    refusal is CapacityUnavailable, which marks the offering unavailable for the next plan."""
    client, stubber = _stubbed()
    stubber.add_client_error(
        "run_instances",
        service_error_code="ReservationCapacityExceeded",
        service_message="no capacity reservation has room",
        http_status_code=400,
    )
    offering = make_offering(capacity_type="Reserved")
    with stubber, pytest.raises(CapacityUnavailable) as caught:
        _compute(client, []).launch(make_claim(), make_class(**IMAGE_ONLY), offering, client_token="tok")
    assert caught.value.code == "ReservationCapacityExceeded"
    assert ERROR_TABLE["InsufficientInstanceCapacity"] is ErrorKind.CAPACITY  # the zone-wide refusal too


class _CountingClient:
    """Records the instance ids of each describe_instances filter; knows no instance."""

    def __init__(self) -> None:
        self.chunks: list[list[str]] = []

    def describe_instances(self, **kwargs: Any) -> dict[str, Any]:
        ids = next(item["Values"] for item in kwargs["Filters"] if item["Name"] == "instance-id")
        self.chunks.append(ids)
        return {"Reservations": []}


def test_describe_splits_long_id_lists_and_skips_empty_ones() -> None:
    client = _CountingClient()
    ids = [f"i-{index:017x}" for index in range(250)]
    assert _compute(client, []).describe([*ids, ids[0]]) == []
    assert [len(chunk) for chunk in client.chunks] == [100, 100, 50]
    assert sorted(item for chunk in client.chunks for item in chunk) == sorted(ids)
    client.chunks.clear()
    assert _compute(client, []).describe([]) == []
    assert client.chunks == []


class _RejectingClient:
    """botocore refuses the request before sending it (a parameter of the wrong shape)."""

    def __init__(self) -> None:
        self.calls = 0

    def run_instances(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        raise ParamValidationError(report="Invalid type for parameter MinCount")


def test_a_request_botocore_rejects_is_permanent_not_retried() -> None:
    client = _RejectingClient()
    sleeps: list[float] = []
    with pytest.raises(PermanentError, match="invalid"):
        _launch(_compute(client, sleeps))
    assert client.calls == 1 and sleeps == []
