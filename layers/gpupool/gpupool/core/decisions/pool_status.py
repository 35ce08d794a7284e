"""plan_pool_status: keep a pool's status true — totals, available, node counts, phase, conditions.

Role: from one snapshot, the status fields gpupool owns; a PatchPoolStatus only when one of
them differs from what the pool says now (so a quiet invocation writes nothing).
Phase: Running when min is met and every node is ready, else Pending; provisioningPhase:
Provisioning while claims are in flight, else Completed. Condition `CapacitySatisfied`.

Must not: perform I/O or read the clock (`now` stamps a changed condition).
"""

from __future__ import annotations

from datetime import datetime

from gpupool.core.model.base import Condition
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.planning.plan import PatchPoolStatus, Plan
from gpupool.core.planning.snapshot import PoolSnapshot, pool_capacity
from gpupool.core.quantity import Quantity

__all__ = ["CONDITION_CAPACITY_SATISFIED", "plan_pool_status"]

CONDITION_CAPACITY_SATISFIED = "CapacitySatisfied"
ZERO = Quantity(0)

_FIELDS = (
    "phase",
    "provisioning_phase",
    "total_nodes",
    "ready_nodes",
    "not_ready_nodes",
    "total_gpus",
    "total_tflops",
    "total_vram",
    "available_tflops",
    "available_vram",
    "conditions",
)


def plan_pool_status(snapshot: PoolSnapshot, *, now: datetime) -> Plan:
    pool = snapshot.pool
    cap = pool_capacity(snapshot)
    config = pool.spec.capacity_config
    minimum = config.min_resources if config else None
    min_t = minimum.tflops if minimum and minimum.tflops is not None else ZERO
    min_v = minimum.vram if minimum and minimum.vram is not None else ZERO
    min_met = cap.total_tflops >= min_t and cap.total_vram >= min_v
    running = min_met and cap.ready_nodes == cap.nodes
    current = pool.status or GPUPoolStatus()
    satisfied = "True" if min_met else "False"
    old = next((c for c in current.conditions if c.type == CONDITION_CAPACITY_SATISFIED), None)
    condition = Condition(
        type=CONDITION_CAPACITY_SATISFIED,
        status=satisfied,
        reason="MinResourcesMet" if min_met else "BelowMinResources",
        message=(
            f"total {cap.total_tflops} TFLOPS / {cap.total_vram} VRAM; "
            f"{cap.in_flight_claims} claim(s) in flight"
        ),
        last_transition_time=old.last_transition_time if old and old.status == satisfied else now,
    )
    others = [c for c in current.conditions if c.type != CONDITION_CAPACITY_SATISFIED]
    desired = current.model_copy(
        update={
            "phase": "Running" if running else "Pending",
            "provisioning_phase": "Provisioning" if cap.in_flight_claims else "Completed",
            "total_nodes": cap.nodes,
            "ready_nodes": cap.ready_nodes,
            "not_ready_nodes": cap.nodes - cap.ready_nodes,
            "total_gpus": cap.gpus,
            "total_tflops": cap.total_tflops,
            "total_vram": cap.total_vram,
            "available_tflops": cap.available_tflops,
            "available_vram": cap.available_vram,
            "conditions": [*others, condition],
        }
    )
    comparable = [f for f in _FIELDS if f != "conditions"]
    same = (
        all(getattr(desired, f) == getattr(current, f) for f in comparable)
        and old is not None
        and (
            old.status,
            old.message,
        )
        == (condition.status, condition.message)
    )
    if same:
        return Plan()
    return Plan(
        actions=(PatchPoolStatus(pool=pool.name, status=desired, fields=_FIELDS),),
        reasons=(
            f"pool {pool.name}: status {desired.phase}, {cap.nodes} node(s), "
            f"{cap.in_flight_claims} in flight",
        ),
    )
