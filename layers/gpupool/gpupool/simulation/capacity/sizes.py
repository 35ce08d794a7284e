"""An offering's size in the simulation's units: TFLOPS and VRAM GiB as decimals, GPUs, price.

Role: `OfferingSize.of(offering)` converts the catalog's `OfferingRef` (Quantities, price text)
once, so the drivers, the placement and the ledger share one conversion.

Must not: choose or price anything beyond reading the offering.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from gpupool.core.planning.plan import OfferingRef
from gpupool.simulation.capacity.placement import NodeShape

__all__ = ["OfferingSize", "to_decimal"]

_GIB = 2**30


def to_decimal(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)


@dataclass(frozen=True)
class OfferingSize:
    tflops: Decimal
    vram_gib: Decimal
    gpus: int
    hourly_price: Decimal

    @classmethod
    def of(cls, offering: OfferingRef) -> OfferingSize:
        return cls(
            tflops=to_decimal(offering.tflops.value),
            vram_gib=to_decimal(offering.vram.value / _GIB),
            gpus=offering.gpu_count,
            hourly_price=Decimal(offering.hourly_price),
        )

    @property
    def shape(self) -> NodeShape:
        gpus = max(self.gpus, 1)
        return NodeShape(gpus=gpus, tflops_per_gpu=self.tflops / gpus, vram_per_gpu=self.vram_gib / gpus)
