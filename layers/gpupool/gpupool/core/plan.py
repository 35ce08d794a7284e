"""Plans: what a decision wants done, as data (typed actions) plus the reasons a human reads.

Role: `Plan` and the `Action` union (discriminated on `kind`). Decisions in
`gpupool.core.decisions` return plans; only `gpupool.service.executor` applies them.

Must not: perform or describe I/O details (clients, retries), read the clock, or log.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpupool.core.model.base import Qty

__all__ = [
    "OfferingRef",
]

CapacityTypeName = Literal["OnDemand", "Spot", "Reserved"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OfferingRef(_Frozen):
    """One offering to launch: instance type × zone × capacity type, with what it brings and costs.

    `key` identifies it for the unavailable-offerings memory.
    """

    instance_type: str = Field(min_length=1)
    region: str | None = None
    zone: str | None = None
    capacity_type: CapacityTypeName = "OnDemand"
    tflops: Qty
    vram: Qty
    gpu_count: int = Field(ge=0)
    hourly_price: str = Field(description="USD per hour, decimal text so it round-trips exactly")

    @property
    def key(self) -> str:
        return f"{self.instance_type}/{self.zone or '*'}/{self.capacity_type}"
