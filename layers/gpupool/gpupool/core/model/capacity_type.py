"""Capacity types, in every spelling gpupool reads or writes: one table.

Role: `CapacityType` — TensorFusion's names (OnDemand, Spot, Reserved), which gpupool's claims,
offerings and plans use; `KarpenterCapacityType` — Karpenter's `karpenter.sh/capacity-type`
values (on-demand, spot, reserved), which the catalog and NodeClaims use; `CAPACITY_TYPE_TABLE`,
one row per capacity type with its spelling in each system: TensorFusion, Karpenter, EC2 (the
`InstanceMarketOptions.MarketType` / `InstanceLifecycle` a Spot instance has, none for the others:
a Reserved instance is one with a `CapacityReservationId`) and ECS (the `SpotStrategy` values that
mean it); `capacity_type(spelling)` reads any of them (any case, `ondemand` too) and
`karpenter_capacity_type(name)` writes Karpenter's.

Must not: import anything but the standard library, or decide which capacity type to use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = [
    "CAPACITY_TYPES",
    "CAPACITY_TYPE_TABLE",
    "KARPENTER_CAPACITY_TYPES",
    "CapacityType",
    "CapacityTypeSpellings",
    "KarpenterCapacityType",
    "capacity_type",
    "karpenter_capacity_type",
    "spellings",
]

CapacityType = Literal["OnDemand", "Spot", "Reserved"]
KarpenterCapacityType = Literal["on-demand", "spot", "reserved"]
CAPACITY_TYPES: Final[tuple[CapacityType, ...]] = get_args(CapacityType)
KARPENTER_CAPACITY_TYPES: Final[tuple[KarpenterCapacityType, ...]] = get_args(KarpenterCapacityType)


@dataclass(frozen=True, slots=True)
class CapacityTypeSpellings:
    """One capacity type as each system spells it (empty: the system has no word for it)."""

    tensorfusion: CapacityType
    karpenter: KarpenterCapacityType
    ec2: str  # InstanceMarketOptions.MarketType on launch, InstanceLifecycle when described
    ecs: tuple[str, ...]  # SpotStrategy values (the first is what a launch sends)


CAPACITY_TYPE_TABLE: Final[tuple[CapacityTypeSpellings, ...]] = (
    CapacityTypeSpellings("OnDemand", "on-demand", "", ("NoSpot",)),
    CapacityTypeSpellings("Spot", "spot", "spot", ("SpotAsPriceGo", "SpotWithPriceLimit")),
    CapacityTypeSpellings("Reserved", "reserved", "", ()),
)
_BY_SPELLING: Final[dict[str, CapacityType]] = {
    spelling.lower(): row.tensorfusion
    for row in CAPACITY_TYPE_TABLE
    for spelling in (row.tensorfusion, row.karpenter, row.karpenter.replace("-", ""))
}
_KARPENTER: Final[dict[CapacityType, KarpenterCapacityType]] = {
    row.tensorfusion: row.karpenter for row in CAPACITY_TYPE_TABLE
}


def capacity_type(spelling: str) -> CapacityType | None:
    """TensorFusion's name for `spelling` (TensorFusion's or Karpenter's, any case, surrounding
    spaces ignored; `ondemand` too); None when it names no capacity type."""
    return _BY_SPELLING.get(spelling.strip().lower())


def karpenter_capacity_type(name: CapacityType) -> KarpenterCapacityType:
    """Karpenter's `karpenter.sh/capacity-type` value for TensorFusion's `name`."""
    return _KARPENTER[name]


def spellings(name: CapacityType) -> CapacityTypeSpellings:
    """The table's row for TensorFusion's `name` (the adapters read their cloud's words there)."""
    return next(row for row in CAPACITY_TYPE_TABLE if row.tensorfusion == name)
