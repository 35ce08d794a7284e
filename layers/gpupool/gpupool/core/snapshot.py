"""The typed view a decision reads: one pool, everything that belongs to it, and cloud facts.

Role: frozen records the service assembles from the `Cluster` and `Compute` ports
(`PoolSnapshot`, `ManagedInstance`, `UnavailableOffering`), plus pure helpers that answer the
questions every decision asks (which claims are in flight, which node belongs to which claim).

Must not: load anything, read the clock, or decide; decisions live in `gpupool.core.decisions`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "InstanceLifecycle",
    "ManagedInstance",
]

InstanceLifecycle = Literal["pending", "running", "stopping", "stopped", "shutting-down", "terminated"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ManagedInstance(_Frozen):
    """A cloud instance as the `Compute` port reports it (only tagged instances are ever reported).

    `claim_name` comes from the `tensor-fusion.ai/node-name` tag, `cluster` from
    `tensor-fusion.ai/cluster`; `launch_time` is timezone-aware UTC.
    """

    instance_id: str = Field(min_length=1)
    state: InstanceLifecycle
    claim_name: str | None = None
    node_class: str | None = None
    cluster: str | None = None
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    launch_time: datetime | None = None
    tags: dict[str, str] = Field(default_factory=dict)

    @property
    def gone(self) -> bool:
        """True when the instance is terminated or on its way there."""
        return self.state in ("shutting-down", "terminated")
