"""Reading what AWS's APIs return about GPU offerings into plain values (pure: no client, no call).

Role: `on_demand_price(document)` — one Pricing API `GetProducts` price-list document (a JSON
text: `product.attributes` and `terms.OnDemand.<offer>.priceDimensions.<dim>.pricePerUnit.USD`)
→ (instance type, USD per hour) when it is a Linux, shared-tenancy, no-preinstalled-software,
used-capacity hourly price, else None; `gpu_instance_type(entry)` — one `DescribeInstanceTypes`
entry → a `LiveInstanceType` when it has NVIDIA GPUs, else None; `latest_spot_prices(entries)` —
`DescribeSpotPriceHistory` entries → the newest price per (type, zone). Field names are AWS's, as
its API reference and the price-list documents spell them.

Must not: import botocore or call anything; guess a price (a document it cannot read is None).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from gpupool.core.catalog.live import LiveInstanceType

__all__ = ["PRICE_FILTERS", "gpu_instance_type", "latest_spot_prices", "on_demand_price"]

# The attributes that make a price-list entry the plain hourly Linux price Karpenter also reads.
PRICE_FILTERS: dict[str, str] = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
_MICRO = Decimal("0.000001")


def _usd(text: object) -> Decimal | None:
    try:
        value = Decimal(str(text)).quantize(_MICRO)
    except InvalidOperation:
        return None
    return value if value > 0 else None


def on_demand_price(document: str | Mapping[str, Any]) -> tuple[str, Decimal] | None:
    """(instance type, USD per hour rounded to 6 decimals) of one price-list document, or None."""
    try:
        data = json.loads(document) if isinstance(document, str) else document
        attributes = data["product"]["attributes"]
        terms = data["terms"]["OnDemand"]
    except (ValueError, KeyError, TypeError):
        return None
    if any(attributes.get(key) != value for key, value in PRICE_FILTERS.items()):
        return None
    name = attributes.get("instanceType")
    if not isinstance(name, str) or not isinstance(terms, Mapping):
        return None
    prices = [
        _usd(dimension.get("pricePerUnit", {}).get("USD"))
        for offer in terms.values()
        for dimension in offer.get("priceDimensions", {}).values()
        if dimension.get("unit") == "Hrs"
    ]
    found = [price for price in prices if price is not None]
    return (name, found[0]) if len(found) == 1 else None


def gpu_instance_type(entry: Mapping[str, Any]) -> LiveInstanceType | None:
    """An instance type with NVIDIA GPUs as `DescribeInstanceTypes` describes it, else None."""
    gpus = (entry.get("GpuInfo") or {}).get("Gpus") or []
    if len(gpus) != 1 or str(gpus[0].get("Manufacturer", "")).upper() != "NVIDIA":
        return None
    gpu = gpus[0]
    name = str(entry.get("InstanceType", ""))
    architectures = (entry.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []
    arch = next((_ARCH[a] for a in architectures if a in _ARCH), None)
    vram_mib = int((gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0))
    if not name or arch is None or "." not in name:
        return None
    return LiveInstanceType(
        name=name,
        family=name.split(".", 1)[0],
        gpu_model=str(gpu.get("Name", "")),
        gpu_count=int(gpu.get("Count", 0)),
        vram_gib_per_gpu=vram_mib // 1024,
        vcpu=int((entry.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
        memory_gib=int((entry.get("MemoryInfo") or {}).get("SizeInMiB", 0)) // 1024,
        arch=arch,
    )


def latest_spot_prices(entries: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Decimal]:
    """The newest Spot price per (instance type, zone) among `DescribeSpotPriceHistory` entries."""
    newest: dict[tuple[str, str], tuple[Any, Decimal]] = {}
    for entry in entries:
        price = _usd(entry.get("SpotPrice"))
        key = (str(entry.get("InstanceType", "")), str(entry.get("AvailabilityZone", "")))
        if price is None or not all(key):
            continue
        stamp = entry.get("Timestamp")
        held = newest.get(key)
        if held is None or (stamp is not None and (held[0] is None or stamp > held[0])):
            newest[key] = (stamp, price)
    return {key: price for key, (_, price) in newest.items()}
