"""The launch decision's budget hook: cut a chosen launch to what `nodeProvisioner.budget` allows.

Role: `apply_budget(snapshot, chosen)` → the offerings to launch, plus the Warning Events and
reasons that say what the budget refused (`BudgetExceeded`) or that a budget field cannot be
read (`NodeLaunchFailed`, nothing new launched). Kept apart from `launch.py` so launch modes can
change there without touching budgets.

Must not: perform I/O, read the clock, or do the budget arithmetic (see `planning.budget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpupool.core.planning.budget import EVENT_BUDGET_EXCEEDED, BudgetError, check_budget
from gpupool.core.planning.plan import Action, OfferingRef, RecordEvent
from gpupool.core.planning.snapshot import PoolSnapshot

__all__ = ["BudgetOutcome", "apply_budget", "pool_warning"]

EVENT_NODE_LAUNCH_FAILED = "NodeLaunchFailed"


@dataclass(frozen=True)
class BudgetOutcome:
    """The offerings still to launch, and the events and reasons the budget adds."""

    offerings: tuple[OfferingRef, ...]
    actions: list[Action] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def pool_warning(snapshot: PoolSnapshot, reason: str, message: str) -> RecordEvent:
    """A Warning Event on the pool (the launch decision's refusals use it too)."""
    return RecordEvent(
        pool=snapshot.name,
        object_kind="GPUPool",
        object_name=snapshot.name,
        event_type="Warning",
        reason=reason,
        message=message,
    )


def apply_budget(snapshot: PoolSnapshot, chosen: Sequence[OfferingRef]) -> BudgetOutcome:
    """What of `chosen` the pool's budget lets launch (everything when the pool has none)."""
    provisioner = snapshot.pool.spec.node_manager_config.node_provisioner
    budget = provisioner.budget if provisioner else None
    try:
        check = check_budget(budget, snapshot.claims, chosen)
    except BudgetError as error:
        message = f"nodeProvisioner.budget cannot be read: {error}; nothing new is launched"
        return BudgetOutcome(
            offerings=(),
            actions=[pool_warning(snapshot, EVENT_NODE_LAUNCH_FAILED, message)],
            reasons=[f"pool {snapshot.name}: {message}"],
        )
    if not check.exceeded:
        return BudgetOutcome(offerings=check.allowed)
    message = check.message()
    return BudgetOutcome(
        offerings=check.allowed,
        actions=[pool_warning(snapshot, EVENT_BUDGET_EXCEEDED, message)],
        reasons=[f"pool {snapshot.name}: {message}"],
    )
