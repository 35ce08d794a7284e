"""The launch decision's budget hooks: what `nodeProvisioner.budget` allows and what it ends.

Role: `apply_budget(snapshot, chosen)` → the offerings to launch, plus the Warning Events and
reasons that say what the budget refused (`BudgetExceeded`) or that a budget field cannot be
read (`NodeLaunchFailed`, nothing new launched). `plan_budget_overrun(snapshot)` → when the
claims that keep billing already pass the ceiling: a `BudgetExceeded` Warning (both strategies)
and, for `budgetExceedStrategy: AlertAndTerminateVM`, `DeleteClaim`s (the claim's finalizer
drains the node and terminates its instance) — interrupted claims first, then claims without a
node, then nodes not in use (no TensorFusion pods read on them, no GPU capacity their GPUNode
reports allocated: `PoolSnapshot.in_use`), then the rest; most expensive first within each; never a node
or GPUNode marked do-not-disrupt. Kept apart from `launch.py` so launch modes can change there
without touching budgets.

Must not: perform I/O, read the clock, or do the budget arithmetic (see `planning.budget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpupool.core.model.claim_state import claim_interrupted, claim_phase, do_not_disrupt
from gpupool.core.model.constants import EVENT_NODE_LAUNCH_FAILED
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.budget import (
    EVENT_BUDGET_EXCEEDED,
    BudgetError,
    check_budget,
    claim_hourly,
    select_budget_terminations,
)
from gpupool.core.planning.plan import Action, DeleteClaim, OfferingRef, RecordEvent
from gpupool.core.planning.snapshot import PoolSnapshot

__all__ = ["BudgetOutcome", "apply_budget", "plan_budget_overrun", "pool_warning", "warning_on_pool"]

TERMINATE_STRATEGY = "AlertAndTerminateVM"


@dataclass(frozen=True)
class BudgetOutcome:
    """The offerings still to launch, and the events and reasons the budget adds."""

    offerings: tuple[OfferingRef, ...]
    actions: list[Action] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def pool_warning(snapshot: PoolSnapshot, reason: str, message: str) -> RecordEvent:
    """A Warning Event on the pool (the launch decision's refusals use it too)."""
    return warning_on_pool(snapshot.name, reason, message)


def warning_on_pool(pool: str, reason: str, message: str) -> RecordEvent:
    """A Warning Event on the GPUPool named `pool` (AutoSelect's budget has no snapshot)."""
    return RecordEvent(
        pool=pool,
        object_kind="GPUPool",
        object_name=pool,
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


def _billing(claim: GPUNodeClaim) -> bool:
    """A claim whose instance keeps billing unless terminated (not Failed, not already deleting)."""
    return claim.metadata.deletion_timestamp is None and claim_phase(claim) != "Failed"


def _termination_order(snapshot: PoolSnapshot, billing: Sequence[GPUNodeClaim]) -> list[GPUNodeClaim]:
    """The billing claims that may be terminated, least disruptive first (module docstring)."""

    def key(claim: GPUNodeClaim) -> tuple[int, object, str]:
        node = snapshot.node_of_claim(claim.name)
        if claim_interrupted(claim):
            group = 0
        elif node is None:
            group = 1
        else:
            group = 2 if not snapshot.in_use(node.name) else 3
        return group, -claim_hourly(claim), claim.name

    candidates = []
    for claim in billing:
        node = snapshot.node_of_claim(claim.name)
        if node is not None and do_not_disrupt(node, snapshot.gpu_node(node.name)):
            continue
        candidates.append(claim)
    return sorted(candidates, key=key)


def plan_budget_overrun(snapshot: PoolSnapshot) -> BudgetOutcome:
    """The Warning, and for AlertAndTerminateVM the claim deletions, when the pool's billing
    claims already pass the budget's ceiling; nothing while they fit (or without a budget). An
    unreadable budget is reported by `apply_budget`, so nothing is decided here for it."""
    provisioner = snapshot.pool.spec.node_manager_config.node_provisioner
    budget = provisioner.budget if provisioner else None
    if budget is None:
        return BudgetOutcome(offerings=())
    billing = [c for c in snapshot.claims if _billing(c)]
    terminating = budget.budget_exceed_strategy == TERMINATE_STRATEGY
    try:
        overrun = select_budget_terminations(
            budget, billing, _termination_order(snapshot, billing) if terminating else []
        )
    except BudgetError:
        return BudgetOutcome(offerings=())
    if overrun is None:
        return BudgetOutcome(offerings=())
    message = overrun.message(terminating=terminating)
    actions: list[Action] = [pool_warning(snapshot, EVENT_BUDGET_EXCEEDED, message)]
    for name in overrun.terminate:
        node = snapshot.node_of_claim(name)
        actions.append(
            DeleteClaim(
                pool=snapshot.name,
                claim=name,
                node=node.name if node else None,
                reason=EVENT_BUDGET_EXCEEDED,
            )
        )
    return BudgetOutcome(offerings=(), actions=actions, reasons=[f"pool {snapshot.name}: {message}"])
