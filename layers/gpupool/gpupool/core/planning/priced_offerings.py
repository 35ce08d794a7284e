"""Live prices over the catalog: the offerings a launch decides from, each price with its source.

Role: `select_offering_prices(catalog, region, live, fallback=…)` — every offering of `region`
as the planner reads it (`OfferingRef`), priced live where the read (`LivePrices`) has a price
and from the shipped catalog where it has none, each naming where its price comes from
("live: <API> <time>" with `priced_at`, or "catalog: <source>"). The rules, in order:
- instance types: the catalog's, plus the ones the read described whose GPU model the catalog
  knows (their TFLOPS are that model's; a model it does not know is left out, as no API
  publishes TFLOPS); a type's hardware is the catalog's where it has it;
- zones: those the read says offer the type; when the read learned no zones, the catalog's;
- On-Demand price: the read's for the type, else the catalog's; Spot: the read's for the type in
  that zone, else the catalog's; a type with neither is not offered (never priced at zero);
- `fallback` (why the read failed, or what it could not read): said in every catalog source, so
  a plan that falls back to the catalog says so in its reasons.
With no read (`live` None) the result equals `catalog_offerings` but for that note.
`describe_price` is how a plan's reasons quote one chosen price (source and age);
`ANNOTATION_PRICE_SOURCE` / `ANNOTATION_PRICED_AT` record them on the claim and on AutoSelect's
NodeClaims (`price_annotations`, with the hourly price), which `recorded_price_source` reads back
for `gpupool status`.

Must not: call anything, read the clock, or rank offerings (`cheapest` does).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Final

from gpupool.core.catalog.live import LiveInstanceType, LivePrices, catalog_price_source, live_price_source
from gpupool.core.catalog.model import (
    CAPACITY_TYPES,
    CapacityType,
    Catalog,
    InstanceType,
    Offering,
    RegionPrices,
)
from gpupool.core.model.constants import ANNOTATION_HOURLY_PRICING
from gpupool.core.planning.offerings import offering_ref
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.quantity import Quantity

__all__ = [
    "ANNOTATION_PRICED_AT",
    "ANNOTATION_PRICE_SOURCE",
    "describe_price",
    "price_age",
    "price_annotations",
    "recorded_price_source",
    "select_offering_prices",
]

# On a GPUNodeClaim and an AutoSelect NodeClaim: where its recorded hourly price came from, and
# when a live one was read.
ANNOTATION_PRICE_SOURCE: Final = "gpupool.io/price-source"
ANNOTATION_PRICED_AT: Final = "gpupool.io/priced-at"


def _tflops_by_model(catalog: Catalog) -> dict[str, Decimal]:
    found: dict[str, Decimal] = {}
    for kind in catalog.instance_types:
        found.setdefault(kind.gpu_model.casefold(), kind.tflops_per_gpu)
    return found


def _from_live(kind: LiveInstanceType, tflops: Decimal) -> InstanceType | None:
    arch = kind.arch if kind.arch in ("amd64", "arm64") else None
    if arch is None or min(kind.gpu_count, kind.vram_gib_per_gpu, kind.vcpu, kind.memory_gib) <= 0:
        return None
    return InstanceType.model_validate(
        {
            "name": kind.name,
            "family": kind.family,
            "gpuModel": kind.gpu_model,
            "gpuCount": kind.gpu_count,
            "tflopsPerGpu": tflops,
            "vramGiBPerGpu": kind.vram_gib_per_gpu,
            "vcpu": kind.vcpu,
            "memoryGiB": kind.memory_gib,
            "arch": arch,
        }
    )


def _instance_types(catalog: Catalog, live: LivePrices | None) -> list[InstanceType]:
    """The catalog's types, then those only the read described (GPU model known to the catalog)."""
    kinds = list(catalog.instance_types)
    if live is None:
        return kinds
    known = {kind.name for kind in kinds}
    tflops = _tflops_by_model(catalog)
    for described in live.instance_types:
        per_gpu = tflops.get(described.gpu_model.casefold())
        if described.name in known or per_gpu is None:
            continue
        kind = _from_live(described, per_gpu)
        if kind is not None:
            kinds.append(kind)
            known.add(kind.name)
    return kinds


def _zones(name: str, live: LivePrices | None, region: RegionPrices | None) -> tuple[str, ...]:
    if live is not None and live.zones:
        return tuple(sorted(live.zones.get(name, frozenset())))
    return region.zones if region is not None else ()


def _catalog_source(region: RegionPrices, capacity_type: CapacityType, fallback: str) -> str:
    table = region.table(capacity_type)
    assert table is not None  # asked only for a price the table holds
    source = catalog_price_source(table)
    return f"{source}; {fallback}" if fallback else source


def _priced(
    kind: InstanceType,
    zone: str,
    capacity_type: CapacityType,
    *,
    live: LivePrices | None,
    table: RegionPrices | None,
    fallback: str,
) -> tuple[Decimal, str, LivePrices | None] | None:
    """(price, its source, the read it came from or None) of one offering; None: not priced."""
    if live is not None:
        price = (
            live.on_demand.get(kind.name)
            if capacity_type == "on-demand"
            else live.spot.get((kind.name, zone))
        )
        api = live.on_demand_source if capacity_type == "on-demand" else live.spot_source
        if price is not None and price > 0:
            return price, live_price_source(api, live.read_at), live
    catalog_price = table.table(capacity_type) if table is not None else None
    if catalog_price is not None and kind.name in catalog_price.prices and table is not None:
        return catalog_price.prices[kind.name], _catalog_source(table, capacity_type, fallback), None
    return None


def select_offering_prices(
    catalog: Catalog, region: str, live: LivePrices | None, *, fallback: str = ""
) -> tuple[OfferingRef, ...]:
    """Every offering of `region`, live prices over the catalog's (see the module docstring)."""
    table = catalog.region(region)
    amounts: dict[str, tuple[Quantity, Quantity]] = {}
    offerings: list[OfferingRef] = []
    for kind in _instance_types(catalog, live):
        for capacity_type in CAPACITY_TYPES:
            for zone in _zones(kind.name, live, table):
                found = _priced(kind, zone, capacity_type, live=live, table=table, fallback=fallback)
                if found is None:
                    continue
                price, source, read = found
                offering = Offering(kind, region, zone, capacity_type, price)
                priced_at = read.read_at if read is not None else None
                offerings.append(offering_ref(offering, amounts, price_source=source, priced_at=priced_at))
    return tuple(offerings)


def price_age(priced_at: datetime | None, now: datetime) -> str:
    """A price's age as a reason shows it: `4m old` (a live read), `shipped catalog` (no read)."""
    if priced_at is None:
        return "shipped catalog"
    seconds = max(int((now - priced_at).total_seconds()), 0)
    if seconds < 120:
        return f"{seconds}s old"
    if seconds < 2 * 3600:
        return f"{seconds // 60}m old"
    return f"{seconds // 3600}h old"


def price_annotations(offering: OfferingRef) -> dict[str, str]:
    """What a claim or NodeClaim records of the price it was launched at: the hourly price, where
    it came from and, for a live price, when it was read."""
    annotations = {ANNOTATION_HOURLY_PRICING: offering.hourly_price}
    if offering.price_source:
        annotations[ANNOTATION_PRICE_SOURCE] = offering.price_source
    if offering.priced_at is not None:
        annotations[ANNOTATION_PRICED_AT] = offering.priced_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return annotations


def describe_price(offering: OfferingRef, *, now: datetime) -> str:
    """`<key> at <price> USD/h (<source>, <age>)`: one chosen offering's price in a plan reason."""
    source = offering.price_source or "source unknown"
    return f"{offering.key} at {offering.hourly_price} USD/h ({source}, {price_age(offering.priced_at, now)})"


def recorded_price_source(annotations: Mapping[str, str], now: datetime) -> str | None:
    """Where a claim's recorded price came from, with its age (`live: <API> <time>, 4m old`;
    `catalog: <source>, shipped catalog`); None when the claim records no source."""
    source = annotations.get(ANNOTATION_PRICE_SOURCE)
    if not source:
        return None
    try:
        read_at = datetime.fromisoformat(annotations.get(ANNOTATION_PRICED_AT, ""))
    except ValueError:
        read_at = None
    return f"{source}, {price_age(read_at, now)}"
