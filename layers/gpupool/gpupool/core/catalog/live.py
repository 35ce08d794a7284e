"""Live prices: what a cloud's APIs said about one region's GPU offerings, and when.

Role: `LivePrices` holds one read of a region — the instance types the cloud described (their
hardware; TFLOPS come from the catalog's GPU models, as no API publishes them), the zones that
offer each, On-Demand prices by type and Spot prices by type and zone, each table with the API it
came from — and the `problems` of the read (a call that failed or was not made within the read's
bounds: what it would have said falls back to the catalog). `LiveInstanceType` is one described
type. `catalog_price_source` shortens a catalog table's source to the line a plan reason shows.

Must not: call anything, read the clock, or choose between live and catalog prices
(`gpupool.core.planning.priced_offerings` does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from gpupool.core.catalog.model import PriceTable

__all__ = ["LiveInstanceType", "LivePrices", "catalog_price_source", "live_price_source"]

_SHORT_SOURCE = 90  # characters of a catalog source a reason quotes


@dataclass(frozen=True, slots=True)
class LiveInstanceType:
    """One GPU instance type as the cloud's API describes it (no TFLOPS: none publishes them)."""

    name: str
    family: str
    gpu_model: str
    gpu_count: int
    vram_gib_per_gpu: int
    vcpu: int
    memory_gib: int
    arch: str  # "amd64" or "arm64"


@dataclass(frozen=True, slots=True)
class LivePrices:
    """One read of a region's offerings and prices. Empty tables mean "not read": the catalog's
    figures stand for them. `zones` by type: those the cloud offers it in (a type absent from it,
    or an empty mapping, means the read did not learn its zones)."""

    region: str
    read_at: datetime
    instance_types: tuple[LiveInstanceType, ...] = ()
    zones: Mapping[str, frozenset[str]] = field(default_factory=dict)
    on_demand: Mapping[str, Decimal] = field(default_factory=dict)
    on_demand_source: str = ""
    spot: Mapping[tuple[str, str], Decimal] = field(default_factory=dict)  # (type, zone) → price
    spot_source: str = ""
    problems: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing was learned: every price and zone comes from the catalog."""
        return not (self.on_demand or self.spot or self.zones)


def live_price_source(api: str, read_at: datetime) -> str:
    """How a plan names a live price's source: `live: <API> <read time, UTC, to the second>`."""
    return f"live: {api} {read_at.strftime('%Y-%m-%dT%H:%M:%SZ')}"


def catalog_price_source(table: PriceTable) -> str:
    """How a plan names a catalog price's source: `catalog: <its source, shortened>` (and
    `(estimate)` when the catalog marks it so)."""
    text = " ".join(table.source.split())
    if len(text) > _SHORT_SOURCE:
        text = text[: _SHORT_SOURCE - 1].rstrip() + "…"
    return f"catalog: {text}" + (" (estimate)" if table.estimate else "")
