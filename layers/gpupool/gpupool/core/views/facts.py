"""The facts `gpupool status` shows, as frozen records with one JSON form (`--json`).

Role: `ClusterView` (when it was computed, each pool's `PoolView`, each node's `NodeView`, the
objects that could not be read), with their parts: `Amount` (one dimension of a pool's capacity
against its min / warm / max, and the gap), `ClaimView` (a GPUNodeClaim or an expansion
NodeClaim: phase, age, offering, price, whether it is stuck), `Budget` (the tightest ceiling
and its use), `Decision` (an Event), `GpuView`. TFLOPS are numbers, VRAM is bytes, money is US
dollars per hour, times are RFC 3339 and ages whole seconds.

Must not: compute anything (the view modules do) or format for people.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "Amount",
    "Budget",
    "ClaimView",
    "ClusterView",
    "Decision",
    "GpuView",
    "NodeView",
    "PoolView",
    "duration_text",
]


def duration_text(seconds: float | None) -> str:
    """A span the way kubectl prints ages: 45s, 7m, 3h12m, 2d5h ("—" for none)."""
    if seconds is None:
        return "—"
    whole = max(0, int(seconds))
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 180:
        return f"{minutes}m" if minutes < 60 else f"{minutes // 60}h{minutes % 60}m"
    hours = minutes // 60
    return f"{hours}h" if hours < 48 else f"{hours // 24}d{hours % 24}h"


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


@dataclass(frozen=True)
class Amount:
    """One dimension (TFLOPS, or VRAM in bytes) of a pool: what it has, wants and may have."""

    total: float
    available: float
    in_flight: float
    minimum: float | None
    warm: float | None
    maximum: float | None
    gap: float

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "available": self.available,
            "in_flight": self.in_flight,
            "min": self.minimum,
            "warm": self.warm,
            "max": self.maximum,
            "gap": self.gap,
        }


@dataclass(frozen=True)
class ClaimView:
    """A GPUNodeClaim (Provisioned / Karpenter pools) or an expansion NodeClaim (AutoSelect)."""

    kind: str
    name: str
    phase: str
    created: datetime | None
    age_seconds: int | None
    phase_seconds: int | None
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    hourly_price: float | None
    node: str | None
    reason: str | None
    stuck: str | None
    price_source: str | None = None  # where the price came from and its age (a claim's record)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "phase": self.phase,
            "created": _time(self.created),
            "age_seconds": self.age_seconds,
            "phase_seconds": self.phase_seconds,
            "instance_type": self.instance_type,
            "zone": self.zone,
            "capacity_type": self.capacity_type,
            "hourly_price": self.hourly_price,
            "price_source": self.price_source,
            "node": self.node,
            "reason": self.reason,
            "stuck": self.stuck,
        }


@dataclass(frozen=True)
class Budget:
    """The pool's tightest budget ceiling (`planning.budget`) and the share its cost uses."""

    field: str
    amount: float
    hourly_ceiling: float
    use_percent: float | None
    strategy: str

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "amount": self.amount,
            "hourly_ceiling": self.hourly_ceiling,
            "use_percent": self.use_percent,
            "strategy": self.strategy,
        }


@dataclass(frozen=True)
class Decision:
    """An Event about the pool, one of its claims, nodes or pods."""

    at: datetime | None
    type: str
    reason: str
    object: str
    message: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "at": _time(self.at),
            "type": self.type,
            "reason": self.reason,
            "object": self.object,
            "message": self.message,
            "count": self.count,
        }


@dataclass(frozen=True)
class PoolView:
    name: str
    mode: str
    phase: str | None
    provisioning_phase: str | None
    tflops: Amount
    vram: Amount
    nodes: int
    ready_nodes: int
    gpus: int
    max_reached: bool
    claims: tuple[ClaimView, ...]
    hourly_cost: float
    budget: Budget | None
    warnings: tuple[str, ...]
    decisions: tuple[Decision, ...]
    node_names: tuple[str, ...]

    @property
    def claims_by_phase(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for claim in self.claims:
            counts[claim.phase] = counts.get(claim.phase, 0) + 1
        return dict(sorted(counts.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "phase": self.phase,
            "provisioning_phase": self.provisioning_phase,
            "tflops": self.tflops.to_json(),
            "vram_bytes": self.vram.to_json(),
            "nodes": self.nodes,
            "ready_nodes": self.ready_nodes,
            "gpus": self.gpus,
            "max_reached": self.max_reached,
            "claims_by_phase": self.claims_by_phase,
            "claims": [c.to_json() for c in self.claims],
            "hourly_cost": self.hourly_cost,
            "budget": self.budget.to_json() if self.budget else None,
            "warnings": list(self.warnings),
            "decisions": [d.to_json() for d in self.decisions],
            "node_names": list(self.node_names),
        }


@dataclass(frozen=True)
class GpuView:
    """One GPU (a GPU object), or a node's GPUs together when only its GPUNode reports."""

    name: str
    index: int | None
    model: str | None
    tflops_total: float
    tflops_available: float
    vram_total: int
    vram_available: int
    usable: bool

    @property
    def allocated_share(self) -> float:
        """The larger of the TFLOPS and VRAM shares allocated (0–1); 0 for an empty record."""
        shares = [
            1 - available / total
            for total, available in (
                (self.tflops_total, self.tflops_available),
                (self.vram_total, self.vram_available),
            )
            if total > 0
        ]
        return max(0.0, min(1.0, max(shares))) if shares else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "index": self.index,
            "model": self.model,
            "tflops": {"total": self.tflops_total, "available": self.tflops_available},
            "vram_bytes": {"total": self.vram_total, "available": self.vram_available},
            "usable": self.usable,
        }


@dataclass(frozen=True)
class NodeView:
    name: str
    pool: str | None
    claim: str | None
    ready: bool
    gpu_model: str | None
    instance_type: str | None
    capacity_type: str | None
    zone: str | None
    hourly_price: float | None
    created: datetime | None
    age_seconds: int | None
    workers: int
    gpus: tuple[GpuView, ...]
    flags: tuple[str, ...]
    price_source: str | None = None  # where the price came from and its age (its claim's record)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pool": self.pool,
            "claim": self.claim,
            "ready": self.ready,
            "gpu_model": self.gpu_model,
            "instance_type": self.instance_type,
            "capacity_type": self.capacity_type,
            "zone": self.zone,
            "hourly_price": self.hourly_price,
            "price_source": self.price_source,
            "created": _time(self.created),
            "age_seconds": self.age_seconds,
            "workers": self.workers,
            "gpus": [g.to_json() for g in self.gpus],
            "flags": list(self.flags),
        }


@dataclass(frozen=True)
class ClusterView:
    generated_at: datetime
    pools: tuple[PoolView, ...]
    nodes: tuple[NodeView, ...]
    unreadable: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "generated_at": _time(self.generated_at),
            "pools": [p.to_json() for p in self.pools],
            "nodes": [n.to_json() for n in self.nodes],
            "unreadable": list(self.unreadable),
        }
