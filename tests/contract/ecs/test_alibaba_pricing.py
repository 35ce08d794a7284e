"""EcsPricing (adapters/alibaba/pricing.py) held to the ECS SDK's own request and response models.

Every request the read makes is built into the SDK's request model (`<Action>Request.from_map`,
as `alibaba.api.SdkEcsApi` sends it) and must read back unchanged (`to_map`): a parameter the
model does not know is dropped by the SDK, so a misspelled one fails here. Every canned answer
is passed through the SDK's response-body model the same way, so it is one the SDK can return.
Also: zones, prices and currency as read, the call bound, and the ECS methods the seam calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from alibabacloud_ecs20140526 import models
from alibabacloud_ecs20140526.client import Client

from gpupool.adapters.alibaba.api import ACTIONS
from gpupool.adapters.alibaba.errors import EcsApiError
from gpupool.adapters.alibaba.pricing import EcsPricing, requests
from gpupool.service.pricing_ports import CallBudget, PricingUnavailable

REGION = "cn-hangzhou"
NOW = datetime(2026, 12, 7, 17, 0, tzinfo=UTC)
T4 = "ecs.gn6i-c4g1.xlarge"
A10 = "ecs.gn7i-c8g1.2xlarge"


def as_sdk_request(action: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` as the SDK's request model reads and writes them back (less the empty lists the
    model writes for repeated parameters it was not given)."""
    built: dict[str, Any] = getattr(models, f"{action}Request")().from_map(dict(params)).to_map()
    return {key: value for key, value in built.items() if key in params or value != []}


def as_sdk_response(action: str, body: Mapping[str, Any]) -> dict[str, Any]:
    shaped: dict[str, Any] = getattr(models, f"{action}ResponseBody")().from_map(dict(body)).to_map()
    assert shaped == body, f"{action}: not an answer the SDK's model holds"
    return shaped


def available(*pairs: tuple[str, str], category: str = "WithStock") -> dict[str, Any]:
    zones: dict[str, list[str]] = {}
    for zone, kind in pairs:
        zones.setdefault(zone, []).append(kind)
    return {
        "AvailableZones": {
            "AvailableZone": [
                {
                    "ZoneId": zone,
                    "RegionId": REGION,
                    "Status": "Available",
                    "StatusCategory": "WithStock",
                    "AvailableResources": {
                        "AvailableResource": [
                            {
                                "Type": "InstanceType",
                                "SupportedResources": {
                                    "SupportedResource": [
                                        {"Value": kind, "Status": "Available", "StatusCategory": category}
                                        for kind in kinds
                                    ]
                                },
                            }
                        ]
                    },
                }
                for zone, kinds in zones.items()
            ]
        },
        "RequestId": "r-1",
    }


def price(trade: float, currency: str = "USD") -> dict[str, Any]:
    return {
        "PriceInfo": {
            "Price": {
                "Currency": currency,
                "TradePrice": trade + 0.02,
                "DetailInfos": {
                    "DetailInfo": [
                        {"Resource": "instanceType", "TradePrice": trade},
                        {"Resource": "systemDisk", "TradePrice": 0.02},
                    ]
                },
            }
        },
        "RequestId": "r-2",
    }


def spot(kind: str, *zones_prices: tuple[str, float]) -> dict[str, Any]:
    return {
        "SpotPrices": {
            "SpotPriceType": [
                {
                    "ZoneId": zone,
                    "InstanceType": kind,
                    "SpotPrice": value,
                    "Timestamp": "2026-12-07T16:59:00Z",
                }
                for zone, value in zones_prices
            ]
        },
        "Currency": "USD",
        "RequestId": "r-3",
    }


class ModelCheckedApi:
    """The `EcsApi` seam: every request must survive the SDK's request model unchanged; answers
    come from `answers[action]` (a body, a callable of the params, or an EcsApiError)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def call(self, action: str, params: Mapping[str, Any]) -> dict[str, Any]:
        assert as_sdk_request(action, params) == dict(params), (
            f"{action}: {params} does not match the SDK model"
        )
        self.sent.append((action, dict(params)))
        answer = self.answers[action]
        answer = answer(params) if callable(answer) else answer
        if isinstance(answer, EcsApiError):
            raise answer
        return as_sdk_response(action, answer)


def world(**overrides: Any) -> ModelCheckedApi:
    answers: dict[str, Any] = {
        "DescribeAvailableResource": available(
            ("cn-hangzhou-i", T4), ("cn-hangzhou-j", T4), ("cn-hangzhou-i", A10)
        ),
        "DescribePrice": lambda params: price({T4: 1.05, A10: 1.7}[params["InstanceType"]]),
        "DescribeSpotPriceHistory": lambda params: spot(params["InstanceType"], ("cn-hangzhou-i", 0.31)),
    }
    answers.update(overrides)
    return ModelCheckedApi(answers)


@pytest.mark.parametrize("action", ["DescribeAvailableResource", "DescribePrice", "DescribeSpotPriceHistory"])
def test_each_request_matches_the_sdks_request_model(action: str) -> None:
    params = requests(REGION, T4, NOW)[action]
    assert as_sdk_request(action, params) == params
    assert action in ACTIONS and hasattr(Client, ACTIONS[action])  # the seam sends it by this method


def test_a_request_the_model_does_not_know_fails_the_check() -> None:
    misspelled = {**requests(REGION, T4, NOW)["DescribePrice"], "InstanceTypes": T4}
    assert as_sdk_request("DescribePrice", misspelled) != misspelled
    with pytest.raises(AssertionError, match="does not match the SDK model"):
        ModelCheckedApi({}).call("DescribePrice", misspelled)


def test_a_read_gathers_zones_and_prices_of_the_catalogs_types_first() -> None:
    api = world()
    budget = CallBudget(16, 8.0)
    live = EcsPricing(api).read_prices(REGION, budget=budget, now=NOW, instance_types=[T4, "ecs.gone", A10])
    assert live.problems == ()
    assert live.zones[T4] == frozenset({"cn-hangzhou-i", "cn-hangzhou-j"})
    assert live.on_demand == {T4: Decimal("1.050000"), A10: Decimal("1.700000")}  # the instance alone
    assert live.spot == {
        (T4, "cn-hangzhou-i"): Decimal("0.310000"),
        (A10, "cn-hangzhou-i"): Decimal("0.310000"),
    }
    priced = [params.get("InstanceType") for action, params in api.sent if action == "DescribePrice"]
    assert priced == [T4, A10]  # a type no zone offers is not priced
    assert len(budget.calls) == 5


def test_the_call_bound_leaves_the_rest_to_the_catalog_and_says_how_many() -> None:
    budget = CallBudget(3, 8.0)
    live = EcsPricing(world()).read_prices(REGION, budget=budget, now=NOW, instance_types=[T4, A10])
    assert set(live.on_demand) == {T4}
    assert live.problems == (
        "DescribePrice not made: the read's bound of 3 calls is spent (1 of 2 types priced from the catalog)",
    )


def test_prices_in_another_currency_are_not_taken() -> None:
    api = world(DescribePrice=price(7.5, "CNY"))
    live = EcsPricing(api).read_prices(REGION, budget=CallBudget(16, 8.0), now=NOW, instance_types=[T4])
    assert live.on_demand == {} and live.spot == {} and live.zones
    assert live.problems == ("DescribePrice answers in CNY, not USD",)


def test_a_read_that_learns_nothing_raises_with_the_error_code() -> None:
    api = world(DescribeAvailableResource=EcsApiError("Forbidden.RAM", "no permission", status=403))
    with pytest.raises(PricingUnavailable, match=r"DescribeAvailableResource failed: Forbidden\.RAM"):
        EcsPricing(api).read_prices(REGION, budget=CallBudget(16, 8.0), now=NOW, instance_types=[])
