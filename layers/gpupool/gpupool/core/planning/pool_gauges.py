"""What a pool stands at after an invocation, as numbers for metrics (capacity gap, cost, budget).

Role: `measure_pool(snapshot)` → `PoolGauges`: the capacity gap still open (TFLOPS, VRAM bytes)
by the one gap arithmetic (`planning.gap`, in-flight claims counted), the hourly cost of the
claims that bill (`planning.budget.fleet_hourly`), the share of the budget's tightest hourly
ceiling that cost uses, and the share of the pool's reported TFLOPS / VRAM still available
(TensorFusion's pool allocation alerts read the same ratio). The handlers emit them (EMF).

Must not: perform I/O, read the clock, decide anything, or emit metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpupool.core.planning.budget import BudgetError, fleet_hourly, tightest_limit
from gpupool.core.planning.gap import capacity_gap
from gpupool.core.planning.snapshot import PoolSnapshot, pool_capacity
from gpupool.core.quantity import Quantity

__all__ = ["PoolGauges", "measure_pool"]


@dataclass(frozen=True)
class PoolGauges:
    """One pool's gauges; None where a value has no meaning (no budget, nothing reported)."""

    pool: str
    gap_tflops: float
    gap_vram_bytes: float
    hourly_cost: float
    budget_use_percent: float | None
    tflops_available_percent: float | None
    vram_available_percent: float | None


def _percent(part: Quantity, whole: Quantity) -> float | None:
    if whole.value <= 0:
        return None
    return round(float(100 * part.value / whole.value), 3)


def measure_pool(snapshot: PoolSnapshot) -> PoolGauges:
    """The gauges of the pool as `snapshot` shows it (see module docstring)."""
    capacity = pool_capacity(snapshot)
    gap = capacity_gap(snapshot.pool, capacity)
    cost = fleet_hourly(snapshot.claims)
    provisioner = snapshot.pool.spec.node_manager_config.node_provisioner
    budget = provisioner.budget if provisioner else None
    use: float | None = None
    if budget is not None:
        try:
            ceiling = tightest_limit(budget).hourly
        except BudgetError:
            ceiling = None  # the launch decision reports the unreadable field
        if ceiling is not None and ceiling > 0:  # a $0 budget has no ratio (its Events say it)
            use = round(float(100 * cost / ceiling), 3)
    return PoolGauges(
        pool=snapshot.name,
        gap_tflops=float(gap.need.tflops),
        gap_vram_bytes=float(gap.need.vram),
        hourly_cost=float(cost.quantize(Decimal("0.0001"))),
        budget_use_percent=use,
        tflops_available_percent=_percent(capacity.available_tflops, capacity.total_tflops),
        vram_available_percent=_percent(capacity.available_vram, capacity.total_vram),
    )
