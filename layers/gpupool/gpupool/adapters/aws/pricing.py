"""The Pricing port on AWS: GPU instance types, their zones and prices, read live within a bound.

Role: `AwsPricing(ec2, pricing)` reads one region, in this order, every page of every call first
spending the read's `CallBudget`:
1. `ec2:DescribeInstanceTypes` (types named `g*` or `p*`; those with NVIDIA GPUs kept),
2. `ec2:DescribeInstanceTypeOfferings` (the zones offering them, by availability zone),
3. `pricing:GetProducts` (the Pricing API, served from us-east-1: the region's Linux,
   shared-tenancy On-Demand prices of GPU instances),
4. `ec2:DescribeSpotPriceHistory` (the Spot price in effect now, per type and zone).
A call that fails or is refused leaves its part to the catalog and is named in `problems`; the
read raises `PricingUnavailable` only when it learned nothing. The pure reading of each answer is
`price_list`'s. The clients are given; `wiring` builds them with timeouts of the read's deadline
and no retries (a retry would spend calls the bound counts).

Must not: retry, decide prices (the core does), or log credentials.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpupool.adapters.aws.errors import error_code
from gpupool.adapters.aws.price_list import (
    PRICE_FILTERS,
    gpu_instance_type,
    latest_spot_prices,
    on_demand_price,
)
from gpupool.adapters.pricing_calls import ReadProblems, bounded_call
from gpupool.core.catalog.live import LiveInstanceType, LivePrices
from gpupool.service.pricing_ports import CallBudget

__all__ = ["EC2_CALLS", "PRICING_API_REGION", "AwsPricing"]

# The EC2 operations a read calls (`botocore_data.EC2_OPERATIONS` ships their models).
EC2_CALLS = ("DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory")

PRICING_API_REGION = "us-east-1"  # the Pricing API's endpoint; it prices every region
_TYPE_PATTERNS = ["g*", "p*"]  # EC2's GPU families (g4dn … g6e, gr6, p3 … p5)
_NAMES_PER_FILTER = 100  # instance-type values one filter carries
_ON_DEMAND_API = "AWS Pricing API"
_SPOT_API = "EC2 DescribeSpotPriceHistory"


class AwsPricing:
    """`service.pricing_ports.Pricing` on a botocore EC2 client and a Pricing API client."""

    api_names = (
        "DescribeInstanceTypes",
        "DescribeInstanceTypeOfferings",
        "GetProducts",
        "DescribeSpotPriceHistory",
    )

    def __init__(self, ec2: Any, pricing: Any) -> None:
        self._ec2 = ec2
        self._pricing = pricing

    def read_prices(
        self, region: str, *, budget: CallBudget, now: datetime, instance_types: Sequence[str] = ()
    ) -> LivePrices:
        del instance_types  # every GPU type is read at once here, page by page
        problems = ReadProblems()
        kinds: list[LiveInstanceType] = problems.attempt(lambda: self._instance_types(budget), [])
        names = [kind.name for kind in kinds]
        zones: dict[str, frozenset[str]] = (
            problems.attempt(lambda: self._zones(names, budget), {}) if names else {}
        )
        on_demand: dict[str, Decimal] = problems.attempt(lambda: self._on_demand(region, budget), {})
        spot: dict[tuple[str, str], Decimal] = (
            problems.attempt(lambda: self._spot(names, budget, now), {}) if names else {}
        )
        live = LivePrices(
            region=region,
            read_at=now,
            instance_types=tuple(kinds),
            zones=zones,
            on_demand=on_demand,
            on_demand_source=_ON_DEMAND_API,
            spot=spot,
            spot_source=_SPOT_API,
            problems=tuple(problems.messages),
        )
        return problems.finish(live, "AWS answered with no GPU offering")

    # ---- the calls ------------------------------------------------------------------------
    def _pages(
        self, client: Any, operation: str, params: Mapping[str, Any], budget: CallBudget
    ) -> Iterator[Any]:
        """Every page of one call, each spending the budget; PricingUnavailable on an error or refusal."""
        token: str | None = None
        method = getattr(client, _method(operation))
        while True:
            request = dict(params, NextToken=token) if token else dict(params)
            # BotoCoreError: timeouts, an unreachable endpoint, invalid parameters.
            page = bounded_call(
                budget,
                operation,
                partial(method, **request),
                errors=(ClientError, BotoCoreError),
                describe=_describe,
            )
            yield page
            token = page.get("NextToken") or None
            if token is None:
                return

    def _instance_types(self, budget: CallBudget) -> list[LiveInstanceType]:
        params = {"Filters": [{"Name": "instance-type", "Values": _TYPE_PATTERNS}], "MaxResults": 100}
        found: list[LiveInstanceType] = []
        for page in self._pages(self._ec2, "DescribeInstanceTypes", params, budget):
            kinds = (gpu_instance_type(entry) for entry in page.get("InstanceTypes", []))
            found.extend(kind for kind in kinds if kind is not None)
        return found

    def _zones(self, names: Sequence[str], budget: CallBudget) -> dict[str, frozenset[str]]:
        zones: dict[str, set[str]] = {}
        for chunk in _chunks(names):
            params = {
                "LocationType": "availability-zone",
                "Filters": [{"Name": "instance-type", "Values": chunk}],
                "MaxResults": 1000,
            }
            for page in self._pages(self._ec2, "DescribeInstanceTypeOfferings", params, budget):
                for entry in page.get("InstanceTypeOfferings", []):
                    zones.setdefault(entry["InstanceType"], set()).add(entry["Location"])
        return {name: frozenset(found) for name, found in zones.items()}

    def _on_demand(self, region: str, budget: CallBudget) -> dict[str, Decimal]:
        terms = {"regionCode": region, "instanceFamily": "GPU instance", **PRICE_FILTERS}
        params = {
            "ServiceCode": "AmazonEC2",
            "FormatVersion": "aws_v1",
            "Filters": [{"Type": "TERM_MATCH", "Field": key, "Value": value} for key, value in terms.items()],
            "MaxResults": 100,
        }
        prices: dict[str, Decimal] = {}
        for page in self._pages(self._pricing, "GetProducts", params, budget):
            for document in page.get("PriceList", []):
                found = on_demand_price(document)
                if found is not None:
                    prices.setdefault(*found)
        return prices

    def _spot(
        self, names: Sequence[str], budget: CallBudget, now: datetime
    ) -> dict[tuple[str, str], Decimal]:
        entries: list[Mapping[str, Any]] = []
        for chunk in _chunks(names):
            params = {
                "InstanceTypes": chunk,
                "ProductDescriptions": ["Linux/UNIX"],
                "StartTime": now,  # the price in effect now, per type and zone
                "MaxResults": 1000,
            }
            for page in self._pages(self._ec2, "DescribeSpotPriceHistory", params, budget):
                entries.extend(page.get("SpotPriceHistory", []))
        return latest_spot_prices(entries)


def _describe(error: Exception) -> str:
    """A failed call's code (an API error) or its kind (botocore's own errors)."""
    return error_code(error) if isinstance(error, ClientError) else type(error).__name__


def _method(operation: str) -> str:
    """botocore's method name of an API operation (`DescribeInstanceTypes` → `describe_instance_types`)."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")


def _chunks(names: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(names), _NAMES_PER_FILTER):
        yield list(names[start : start + _NAMES_PER_FILTER])
