"""AwsPricing (adapters/aws/pricing.py) against moto for EC2 and botocore's Stubber for the Pricing API.

moto serves DescribeInstanceTypes, DescribeInstanceTypeOfferings and DescribeSpotPriceHistory;
it does not serve the Pricing API's GetProducts (404 "Not yet implemented"), so that client is
stubbed: botocore validates every request against the Pricing API's own model before the
Stubber sees it (an unknown or ill-typed parameter raises ParamValidationError), the Stubber
checks it equals the request expected, and validates the stubbed answer against the model too.
Clients are made as the functions make theirs (`aws.session`: EC2 on the shipped cut).
Also `price_list`'s reading of each answer, and the read's bound in calls and in time.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber
from botocore.validate import validate_parameters
from moto import mock_aws

from gpupool.adapters.aws.price_list import (
    PRICE_FILTERS,
    gpu_instance_type,
    latest_spot_prices,
    on_demand_price,
)
from gpupool.adapters.aws.pricing import PRICING_API_REGION, AwsPricing
from gpupool.adapters.aws.session import aws_session
from gpupool.service.pricing_ports import CallBudget, PricingUnavailable

REGION = "us-east-1"
NOW = datetime(2026, 12, 7, 17, 0, tzinfo=UTC)
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def price_document(instance_type: str, usd: str, **attributes: str) -> str:
    """A Pricing API price-list document as GetProducts returns it (aws_v1 format)."""
    body = {
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {
                "instanceType": instance_type,
                "regionCode": REGION,
                "instanceFamily": "GPU instance",
                **PRICE_FILTERS,
                **attributes,
            },
            "sku": f"SKU{instance_type}",
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"SKU{instance_type}.JRTCKXETXF": {
                    "priceDimensions": {
                        f"SKU{instance_type}.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "pricePerUnit": {"USD": usd},
                            "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                        }
                    },
                    "effectiveDate": "2026-12-01T00:00:00Z",
                }
            }
        },
        "version": "20261201000000",
        "publicationDate": "2026-12-01T00:00:00Z",
    }
    return json.dumps(body)


def get_products_request(token: str | None = None) -> dict[str, Any]:
    terms = {"regionCode": REGION, "instanceFamily": "GPU instance", **PRICE_FILTERS}
    request: dict[str, Any] = {
        "ServiceCode": "AmazonEC2",
        "FormatVersion": "aws_v1",
        "Filters": [{"Type": "TERM_MATCH", "Field": key, "Value": value} for key, value in terms.items()],
        "MaxResults": 100,
    }
    if token:
        request["NextToken"] = token
    return request


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, Stubber]]:
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    with mock_aws():
        session = aws_session(region_name=REGION, **KEYS)
        ec2 = session.client("ec2")
        pricing = session.client("pricing", region_name=PRICING_API_REGION)
        with Stubber(pricing) as stubber:
            yield ec2, pricing, stubber
            stubber.assert_no_pending_responses()


def test_a_read_gathers_types_zones_on_demand_and_spot(clients: tuple[Any, Any, Stubber]) -> None:
    ec2, pricing, stubber = clients
    stubber.add_response(
        "get_products",
        {
            "PriceList": [price_document("g4dn.xlarge", "0.5260000000")],
            "NextToken": "page-2",
            "FormatVersion": "aws_v1",
        },
        get_products_request(),
    )
    stubber.add_response(
        "get_products",
        {
            "PriceList": [
                price_document("g5.xlarge", "1.0060000000"),
                price_document("g5.xlarge", "9", tenancy="Dedicated"),
            ]
        },
        get_products_request("page-2"),
    )
    budget = CallBudget(16, 120.0)
    live = AwsPricing(ec2, pricing).read_prices(REGION, budget=budget, now=NOW)
    assert live.problems == ()
    assert live.on_demand == {"g4dn.xlarge": Decimal("0.526000"), "g5.xlarge": Decimal("1.006000")}
    kinds = {kind.name: kind for kind in live.instance_types}
    assert (kinds["g4dn.12xlarge"].gpu_model, kinds["g4dn.12xlarge"].gpu_count) == ("T4", 4)
    assert kinds["g4dn.12xlarge"].vram_gib_per_gpu == 16 and kinds["g5g.xlarge"].arch == "arm64"
    assert live.zones["g4dn.xlarge"] >= {"us-east-1a", "us-east-1b"}
    assert ("g4dn.xlarge", "us-east-1a") in live.spot  # moto's Spot history
    assert (live.on_demand_source, live.spot_source) == ("AWS Pricing API", "EC2 DescribeSpotPriceHistory")
    assert budget.calls == [
        "DescribeInstanceTypes",
        "DescribeInstanceTypeOfferings",
        "GetProducts",
        "GetProducts",
        "DescribeSpotPriceHistory",
    ]


def test_a_failed_pricing_call_leaves_the_rest_and_is_named(clients: tuple[Any, Any, Stubber]) -> None:
    ec2, pricing, stubber = clients
    stubber.add_client_error("get_products", "ThrottlingException", http_status_code=400)
    live = AwsPricing(ec2, pricing).read_prices(REGION, budget=CallBudget(16, 120.0), now=NOW)
    assert live.on_demand == {} and live.zones and live.spot
    assert live.problems == ("GetProducts failed: ThrottlingException",)


def test_the_call_bound_refuses_the_calls_past_it(clients: tuple[Any, Any, Stubber]) -> None:
    ec2, pricing, _ = clients
    budget = CallBudget(2, 120.0)
    live = AwsPricing(ec2, pricing).read_prices(REGION, budget=budget, now=NOW)
    assert budget.calls == ["DescribeInstanceTypes", "DescribeInstanceTypeOfferings"]
    assert live.zones and not live.on_demand and not live.spot
    assert live.problems == (
        "GetProducts not made: the read's bound of 2 calls is spent",
        "DescribeSpotPriceHistory not made: the read's bound of 2 calls is spent",
    )


def test_a_read_that_learns_nothing_raises(clients: tuple[Any, Any, Stubber]) -> None:
    ec2, pricing, _ = clients
    clock = iter([0.0, 100.0, 100.0, 100.0, 100.0])  # the deadline passes before the first call
    with pytest.raises(PricingUnavailable, match="DescribeInstanceTypes not made: the read's deadline"):
        AwsPricing(ec2, pricing).read_prices(
            REGION, budget=CallBudget(16, 8.0, monotonic=lambda: next(clock)), now=NOW
        )


def test_the_pricing_request_matches_the_sdks_model_and_a_wrong_one_fails(
    clients: tuple[Any, Any, Stubber],
) -> None:
    _, pricing, stubber = clients
    stubber.add_response("get_products", {"PriceList": []}, get_products_request())
    assert pricing.get_products(**get_products_request())["PriceList"] == []  # the request we send
    model = pricing.meta.service_model.operation_model("GetProducts").input_shape
    validate_parameters(get_products_request(), model)  # botocore's own check, as the client runs it
    with pytest.raises(ParamValidationError, match="Filter"):
        validate_parameters({**get_products_request(), "Filter": []}, model)  # a misspelled parameter
    with pytest.raises(ParamValidationError, match="MaxResults"):
        validate_parameters({**get_products_request(), "MaxResults": "100"}, model)  # ill-typed


# ---- price_list: reading the answers -----------------------------------------------------------
def test_a_price_document_reads_as_the_hourly_linux_price_or_none() -> None:
    assert on_demand_price(price_document("g6.xlarge", "0.8048000000")) == ("g6.xlarge", Decimal("0.804800"))
    assert on_demand_price(price_document("g6.xlarge", "0.8", operatingSystem="Windows")) is None
    assert on_demand_price(price_document("g6.xlarge", "0.0000000000")) is None  # never priced at zero
    assert on_demand_price("{not json") is None
    assert on_demand_price(json.dumps({"product": {"attributes": {}}})) is None


def test_only_nvidia_gpu_types_are_read() -> None:
    nvidia = {
        "InstanceType": "g6.xlarge",
        "GpuInfo": {
            "Gpus": [{"Name": "L4", "Manufacturer": "NVIDIA", "Count": 1, "MemoryInfo": {"SizeInMiB": 22888}}]
        },
        "VCpuInfo": {"DefaultVCpus": 4},
        "MemoryInfo": {"SizeInMiB": 16384},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
    }
    kind = gpu_instance_type(nvidia)
    assert kind is not None and (kind.family, kind.gpu_model, kind.vram_gib_per_gpu, kind.memory_gib) == (
        "g6",
        "L4",
        22,
        16,
    )
    amd = {**nvidia, "GpuInfo": {"Gpus": [{"Name": "Radeon Pro V520", "Manufacturer": "AMD", "Count": 1}]}}
    assert gpu_instance_type(amd) is None
    assert gpu_instance_type({**nvidia, "GpuInfo": None}) is None


def test_the_newest_spot_price_per_type_and_zone_wins() -> None:
    older, newer = datetime(2026, 12, 7, 16, tzinfo=UTC), datetime(2026, 12, 7, 17, tzinfo=UTC)
    entries = [
        {
            "InstanceType": "g5.xlarge",
            "AvailabilityZone": "us-east-1a",
            "SpotPrice": "0.40",
            "Timestamp": older,
        },
        {
            "InstanceType": "g5.xlarge",
            "AvailabilityZone": "us-east-1a",
            "SpotPrice": "0.35",
            "Timestamp": newer,
        },
        {
            "InstanceType": "g5.xlarge",
            "AvailabilityZone": "us-east-1b",
            "SpotPrice": "bad",
            "Timestamp": newer,
        },
    ]
    assert latest_spot_prices(entries) == {("g5.xlarge", "us-east-1a"): Decimal("0.350000")}


def test_a_pricing_call_that_times_out_is_named_and_the_rest_is_kept(
    clients: tuple[Any, Any, Stubber],
) -> None:
    ec2, _, _ = clients
    silent = socket.socket()  # accepts the connection, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        config = Config(retries={"total_max_attempts": 1}, connect_timeout=0.5, read_timeout=0.5)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        slow = aws_session(region_name=REGION, **KEYS).client(
            "pricing", region_name=PRICING_API_REGION, endpoint_url=url, config=config
        )
        live = AwsPricing(ec2, slow).read_prices(REGION, budget=CallBudget(16, 120.0), now=NOW)
    finally:
        silent.close()
    assert live.problems == ("GetProducts failed: ReadTimeoutError",)
    assert live.on_demand == {} and live.zones and live.spot
