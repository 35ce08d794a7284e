"""The Pricing port on Alibaba Cloud ECS: zone offerings and prices of GPU types, read within a bound.

Role: `EcsPricing(api)` reads one region through the `alibaba.api.EcsApi` seam, each call first
spending the read's `CallBudget`:
1. `DescribeAvailableResource` (pay-as-you-go instance types with stock, by zone),
2. per instance type, the caller's first (its catalog's), as far as the bound allows:
   `DescribePrice` (the hourly pay-as-you-go price of the instance type alone, its
   `DetailInfo` of resource `instanceType`) and `DescribeSpotPriceHistory` (the Spot price in
   effect now, per zone; Linux, VPC).
Prices are kept only in USD (the catalog's currency): both answers name their currency, the
account's; another stops the read, which the catalog then prices, saying why. ECS's API
publishes no GPU facts in these calls: the types are the catalog's (`instance_types` empty).
A call that fails or is refused is named in `problems` and its part left to the catalog; the
read raises `PricingUnavailable` only when it learned nothing. `requests` builds each call's
parameters by the API's own names (a test holds them to the SDK's request models).

Must not: retry, decide prices (the core does), or log credentials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from gpupool.adapters.alibaba.api import EcsApi
from gpupool.adapters.alibaba.errors import EcsApiError
from gpupool.adapters.pricing_calls import ReadProblems, bounded_call
from gpupool.core.catalog.live import LivePrices
from gpupool.service.pricing_ports import CallBudget, PricingUnavailable

__all__ = ["EcsPricing", "requests"]

_ON_DEMAND_API = "Alibaba ECS DescribePrice"
_SPOT_API = "Alibaba ECS DescribeSpotPriceHistory"
_MICRO = Decimal("0.000001")
_STOCKED = ("WithStock", "ClosedWithStock")  # sold now (the second: not replenished once gone)


def requests(region: str, instance_type: str, now: datetime) -> dict[str, dict[str, Any]]:
    """Every call's parameters by ECS action (the available-resource call names no type)."""
    return {
        "DescribeAvailableResource": {
            "RegionId": region,
            "DestinationResource": "InstanceType",
            "InstanceChargeType": "PostPaid",
            "ResourceType": "instance",
        },
        "DescribePrice": {
            "RegionId": region,
            "ResourceType": "instance",
            "InstanceType": instance_type,
            "PriceUnit": "Hour",
            "Period": 1,
            "Amount": 1,
        },
        "DescribeSpotPriceHistory": {
            "RegionId": region,
            "InstanceType": instance_type,
            "NetworkType": "vpc",
            "OSType": "linux",
            "StartTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }


def _usd(text: object) -> Decimal | None:
    try:
        value = Decimal(str(text)).quantize(_MICRO)
    except InvalidOperation:
        return None
    return value if value > 0 else None


def _items(body: Mapping[str, Any], *path: str) -> list[Mapping[str, Any]]:
    """The list at `path` (ECS nests each list in an object named for its item)."""
    found: Any = body
    for key in path:
        found = found.get(key) if isinstance(found, Mapping) else None
    return [item for item in found or [] if isinstance(item, Mapping)] if isinstance(found, list) else []


def _zones(body: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    zones: dict[str, set[str]] = {}
    for zone in _items(body, "AvailableZones", "AvailableZone"):
        for resource in _items(zone, "AvailableResources", "AvailableResource"):
            if resource.get("Type") != "InstanceType":
                continue
            for supported in _items(resource, "SupportedResources", "SupportedResource"):
                if supported.get("Status") == "Available" and supported.get("StatusCategory") in _STOCKED:
                    zones.setdefault(str(supported.get("Value")), set()).add(str(zone.get("ZoneId")))
    return {name: frozenset(found) for name, found in zones.items()}


def _instance_price(body: Mapping[str, Any]) -> tuple[Decimal | None, str]:
    """(the instance type's own hourly trade price, the currency) of a DescribePrice answer."""
    price = (body.get("PriceInfo") or {}).get("Price") or {}
    currency = str(price.get("Currency") or "")
    for detail in _items(price, "DetailInfos", "DetailInfo"):
        if detail.get("Resource") == "instanceType":
            return _usd(detail.get("TradePrice")), currency
    return None, currency


def _spot(body: Mapping[str, Any], instance_type: str) -> dict[tuple[str, str], Decimal]:
    newest: dict[str, tuple[str, Decimal]] = {}
    for entry in _items(body, "SpotPrices", "SpotPriceType"):
        price, zone = _usd(entry.get("SpotPrice")), str(entry.get("ZoneId", ""))
        stamp = str(entry.get("Timestamp", ""))
        if price is not None and zone and (zone not in newest or stamp > newest[zone][0]):
            newest[zone] = (stamp, price)
    return {(instance_type, zone): price for zone, (_, price) in newest.items()}


def _describe(error: Exception) -> str:
    """A failed call's ECS error code, or that the transport failed."""
    return (error.code if isinstance(error, EcsApiError) else "") or "transport error"


class EcsPricing:
    """`service.pricing_ports.Pricing` on the ECS API seam (`alibaba.api.SdkEcsApi` in production)."""

    api_names = ("DescribeAvailableResource", "DescribePrice", "DescribeSpotPriceHistory")

    def __init__(self, api: EcsApi) -> None:
        self._api = api

    def _call(self, action: str, params: Mapping[str, Any], budget: CallBudget) -> dict[str, Any]:
        return bounded_call(
            budget, action, lambda: self._api.call(action, params), errors=(EcsApiError,), describe=_describe
        )

    def read_prices(
        self, region: str, *, budget: CallBudget, now: datetime, instance_types: Sequence[str] = ()
    ) -> LivePrices:
        problems = ReadProblems()
        available = requests(region, "", now)["DescribeAvailableResource"]
        zones: dict[str, frozenset[str]] = problems.attempt(
            lambda: _zones(self._call("DescribeAvailableResource", available, budget)), {}
        )
        on_demand: dict[str, Decimal] = {}
        spot: dict[tuple[str, str], Decimal] = {}
        wanted = [name for name in instance_types if not zones or name in zones]
        for done, name in enumerate(wanted):
            params = requests(region, name, now)
            try:
                price, currency = _instance_price(
                    self._call("DescribePrice", params["DescribePrice"], budget)
                )
                if currency != "USD":
                    problems.note(f"DescribePrice answers in {currency or 'no currency'}, not USD")
                    break
                if price is not None:
                    on_demand[name] = price
                history = self._call("DescribeSpotPriceHistory", params["DescribeSpotPriceHistory"], budget)
                if str(history.get("Currency") or "USD") != "USD":
                    problems.note(f"DescribeSpotPriceHistory answers in {history.get('Currency')}, not USD")
                    break
                spot.update(_spot(history, name))
            except PricingUnavailable as failed:
                left = f"{len(wanted) - done} of {len(wanted)} types priced from the catalog"
                problems.note(f"{failed} ({left})")
                break
        live = LivePrices(
            region=region,
            read_at=now,
            zones=zones,
            on_demand=on_demand,
            on_demand_source=_ON_DEMAND_API,
            spot=spot,
            spot_source=_SPOT_API,
            problems=tuple(problems.messages),
        )
        return problems.finish(live, "ECS answered with no GPU offering")
