"""Ec2Compute.check_connection: a DescribeInstances dry run — succeeds on moto (AWS answers
DryRunOperation), and an authorization failure or an unreachable endpoint becomes the domain
error whose message the cluster's CloudVendorConnectionReady condition shows."""

from __future__ import annotations

import pytest
from botocore.config import Config
from botocore.stub import Stubber

from gpupool.adapters.aws.compute import Ec2Compute
from gpupool.adapters.aws.session import aws_session
from gpupool.service.errors import PermanentError, Throttled
from tests.contract.ec2.conftest import Ec2World


def test_dry_run_succeeds_against_moto(ec2_world: Ec2World) -> None:
    ec2_world.compute().check_connection()


def test_unauthorized_is_a_permanent_error_with_the_code() -> None:
    session = aws_session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    client = session.client("ec2")
    stubber = Stubber(client)
    stubber.add_client_error(
        "describe_instances",
        service_error_code="UnauthorizedOperation",
        service_message="You are not authorized to perform this operation.",
        http_status_code=403,
        expected_params={"DryRun": True, "MaxResults": 5},
    )
    with stubber, pytest.raises(PermanentError, match=r"UnauthorizedOperation|not authorized"):
        Ec2Compute(client, cluster="demo").check_connection()
    stubber.assert_no_pending_responses()


def test_an_unreachable_endpoint_is_throttled_not_a_crash() -> None:
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=1)
    session = aws_session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    client = session.client("ec2", endpoint_url="http://127.0.0.1:9", config=config)
    with pytest.raises(Throttled, match="DescribeInstances"):
        Ec2Compute(client, cluster="demo").check_connection()
