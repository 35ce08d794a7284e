"""The GPU catalog's data model: instance types, regional prices, and the offerings they yield.

Role: validate the bundled catalog data (strictly: an unknown field, a non-positive price, a price
for an unknown type or a missing source is an error) and expand it into offerings — instance type ×
zone × capacity type, each with a known hourly price. An instance type without a known price in a
region is simply not offered there; nothing is ever priced at zero.

Must not: read files (the loader does), know about pools or requirements, or choose offerings.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from gpupool.core.deferred_model import DeferredModel
from gpupool.core.model.capacity_type import KARPENTER_CAPACITY_TYPES, KarpenterCapacityType
from gpupool.core.model.cloud import Cloud

__all__ = [
    "CAPACITY_TYPES",
    "CapacityType",
    "Catalog",
    "InstanceType",
    "Offering",
    "PriceTable",
    "RegionPrices",
]

# The catalog speaks Karpenter's spelling of capacity types (core.model.capacity_type); it prices
# on-demand and spot only.
CapacityType = KarpenterCapacityType
CAPACITY_TYPES: tuple[CapacityType, ...] = KARPENTER_CAPACITY_TYPES
MICRO_USD = 10**6


class _Strict(DeferredModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class InstanceType(_Strict):
    """One GPU instance type's hardware, as the cloud documents it."""

    name: str = Field(min_length=1)
    family: str = Field(min_length=1)
    gpu_model: str = Field(alias="gpuModel", min_length=1)
    gpu_count: int = Field(alias="gpuCount", gt=0)
    tflops_per_gpu: Decimal = Field(alias="tflopsPerGpu", gt=0)
    vram_gib_per_gpu: int = Field(alias="vramGiBPerGpu", gt=0)
    vcpu: int = Field(gt=0)
    memory_gib: int = Field(alias="memoryGiB", gt=0)
    arch: Literal["amd64", "arm64"]
    os: Literal["linux"] = "linux"

    @property
    def tflops(self) -> Fraction:
        """FP16 dense TFLOPS of the whole instance."""
        return Fraction(self.tflops_per_gpu) * self.gpu_count

    @property
    def vram_gib(self) -> int:
        return self.vram_gib_per_gpu * self.gpu_count


class PriceTable(_Strict):
    """USD per hour per instance type, with where the figures come from; `estimate`: the figures
    are not quoted from a published price list (derived, assumed or recalled; the source says how),
    so nothing that claims a real price — the simulation's Spot column — may rest on them."""

    source: str = Field(min_length=10)
    estimate: bool = False
    prices: dict[str, Decimal]

    @field_validator("prices")
    @classmethod
    def _positive_micro_dollars(cls, prices: dict[str, Decimal]) -> dict[str, Decimal]:
        for name, price in prices.items():
            if price <= 0:
                raise ValueError(f"price of {name} must be positive, got {price}")
            if (price * MICRO_USD) % 1 != 0:
                raise ValueError(f"price of {name} has more than 6 decimals: {price}")
        return prices


class RegionPrices(_Strict):
    name: str = Field(min_length=1)
    zones: tuple[str, ...] = Field(min_length=1)
    on_demand: PriceTable = Field(alias="onDemand")
    spot: PriceTable | None = None
    reserved: PriceTable | None = None

    def table(self, capacity_type: CapacityType) -> PriceTable | None:
        if capacity_type == "on-demand":
            return self.on_demand
        return self.spot if capacity_type == "spot" else self.reserved


class CatalogSources(_Strict):
    hardware: str = Field(min_length=10)
    tflops: str = Field(min_length=10)


@dataclass(frozen=True, slots=True)
class Offering:
    """Something we can buy: an instance type in a zone with a capacity type, at a known price."""

    instance_type: InstanceType
    region: str
    zone: str
    capacity_type: CapacityType
    hourly_price: Decimal

    @property
    def price_micro_usd(self) -> int:
        return int(self.hourly_price * MICRO_USD)


class Catalog(_Strict):
    """One cloud's instance types and regional prices."""

    cloud: Cloud
    currency: Literal["USD"]
    sources: CatalogSources
    instance_types: tuple[InstanceType, ...] = Field(alias="instanceTypes", min_length=1)
    regions: tuple[RegionPrices, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Catalog:
        names = [t.name for t in self.instance_types]
        if len(set(names)) != len(names):
            raise ValueError("instance type names must be unique")
        region_names = [r.name for r in self.regions]
        if len(set(region_names)) != len(region_names):
            raise ValueError("region names must be unique")
        for region in self.regions:
            for capacity_type in CAPACITY_TYPES:
                table = region.table(capacity_type)
                unknown = sorted(set(table.prices) - set(names)) if table else []
                if unknown:
                    raise ValueError(f"{region.name} {capacity_type} prices name unknown types: {unknown}")
        return self

    def instance_type(self, name: str) -> InstanceType | None:
        return next((t for t in self.instance_types if t.name == name), None)

    def region(self, name: str) -> RegionPrices | None:
        return next((r for r in self.regions if r.name == name), None)

    @property
    def region_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.regions)

    def prices(self, region: str, instance_type: str) -> dict[CapacityType, Decimal]:
        """Known prices of one type in one region, by capacity type (absent = not offered)."""
        found = self.region(region)
        result: dict[CapacityType, Decimal] = {}
        for capacity_type in CAPACITY_TYPES:
            table = found.table(capacity_type) if found else None
            if table is not None and instance_type in table.prices:
                result[capacity_type] = table.prices[instance_type]
        return result

    def offerings(self, region: str) -> tuple[Offering, ...]:
        """Every priced instance type × zone × capacity type in a region, in a stable order."""
        found = self.region(region)
        if found is None:
            return ()
        result: list[Offering] = []
        for instance_type in self.instance_types:
            for capacity_type, price in self.prices(region, instance_type.name).items():
                result.extend(
                    Offering(instance_type, region, zone, capacity_type, price) for zone in found.zones
                )
        return tuple(result)
