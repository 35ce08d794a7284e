"""Budget check: which part of a launch plan the pool's `nodeProvisioner.budget` allows.

Role: turn TensorFusion's budget fields (`budgetPerDay`, `budgetPerMonth`, `budgetPerQuarter`,
dollars) into hourly ceilings — the amount divided by the longest such period (24 h, 31 days,
92 days) — and keep the pool's hourly run rate (every claim not Failed, at the price it was
launched for, plus what the plan adds) at or under the tightest one. A rate at or under
`budgetPerDay / 24` can never spend more than `budgetPerDay` in any 24 hours, and so on for the
month and quarter, without remembering past spend. What passes: the cheapest offerings of the
plan first, as many as fit (both strategies). When the claims that keep billing already pass the
ceiling (a budget lowered, a price recorded higher), `select_budget_terminations` picks, from the
candidates in the order given, the claims whose termination brings the rate back under it
(`AlertAndTerminateVM`; the decision in `decisions.launch_budget` orders and protects).

Must not: perform I/O, read the clock, or choose offerings (the plan is given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from gpupool.core.model.claim_state import claim_phase
from gpupool.core.model.constants import ANNOTATION_HOURLY_PRICING, EVENT_BUDGET_EXCEEDED
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import Budget
from gpupool.core.planning.plan import OfferingRef

__all__ = [
    "EVENT_BUDGET_EXCEEDED",
    "BudgetCheck",
    "BudgetError",
    "BudgetLimit",
    "BudgetOverrun",
    "budget_limits",
    "check_budget",
    "claim_hourly",
    "fleet_hourly",
    "select_budget_terminations",
    "tightest_limit",
]


# The longest day, month and quarter: a rate under amount / hours never passes the amount.
_PERIODS: tuple[tuple[str, str, int], ...] = (
    ("budget_per_day", "budgetPerDay", 24),
    ("budget_per_month", "budgetPerMonth", 31 * 24),
    ("budget_per_quarter", "budgetPerQuarter", 92 * 24),
)


class BudgetError(ValueError):
    """A budget field that is not a non-negative dollar amount."""


@dataclass(frozen=True)
class BudgetLimit:
    """One budget field as an hourly ceiling."""

    field: str
    amount: Decimal
    hours: int

    @property
    def hourly(self) -> Decimal:
        return self.amount / self.hours

    def describe(self) -> str:
        return f"{self.field} ${self.amount} (${_money(self.hourly)}/h)"


@dataclass(frozen=True)
class BudgetCheck:
    """The outcome: the offerings allowed (in plan order), those refused, and why."""

    allowed: tuple[OfferingRef, ...]
    refused: tuple[OfferingRef, ...]
    running_hourly: Decimal
    limit: BudgetLimit | None

    @property
    def exceeded(self) -> bool:
        return bool(self.refused)

    def message(self) -> str:
        """Why offerings were refused ("" when none was)."""
        if not self.refused or self.limit is None:
            return ""
        planned = sum((Decimal(o.hourly_price) for o in self.allowed + self.refused), Decimal(0))
        kept = len(self.allowed)
        total = kept + len(self.refused)
        return (
            f"budget: ${_money(self.running_hourly)}/h running + ${_money(planned)}/h planned would pass "
            f"{self.limit.describe()}; launching {kept} of {total} node(s)"
        )


def _money(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.001')):f}"


def budget_limits(budget: Budget) -> tuple[BudgetLimit, ...]:
    """The budget's fields as hourly ceilings; BudgetError names a field that is not an amount."""
    limits = []
    for attribute, field, hours in _PERIODS:
        text = getattr(budget, attribute)
        try:
            amount = Decimal(str(text).strip().lstrip("$"))
        except InvalidOperation:
            raise BudgetError(f"{field} {text!r} is not a dollar amount") from None
        if not amount.is_finite() or amount < 0:
            raise BudgetError(f"{field} {text!r} is not a non-negative dollar amount")
        limits.append(BudgetLimit(field=field, amount=amount, hours=hours))
    return tuple(limits)


def tightest_limit(budget: Budget) -> BudgetLimit:
    """The budget field with the lowest hourly ceiling (BudgetError when one is unreadable)."""
    return min(budget_limits(budget), key=lambda lim: lim.hourly)


def claim_hourly(claim: GPUNodeClaim) -> Decimal:
    """A claim's recorded hourly price; 0 when unreadable (launch never writes one)."""
    try:
        return Decimal(claim.metadata.annotations.get(ANNOTATION_HOURLY_PRICING, "0"))
    except InvalidOperation:
        return Decimal(0)


def fleet_hourly(claims: Sequence[GPUNodeClaim]) -> Decimal:
    """What the pool's claims cost per hour: every claim not Failed (a deleting or interrupted
    claim's instance may still bill), at its recorded hourly price."""
    total = Decimal(0)
    for claim in claims:
        if claim_phase(claim) != "Failed":
            total += claim_hourly(claim)
    return total


def check_budget(
    budget: Budget | None, claims: Sequence[GPUNodeClaim], planned: Sequence[OfferingRef]
) -> BudgetCheck:
    """The part of `planned` the budget allows (all of it without a budget)."""
    running = fleet_hourly(claims)
    if budget is None:
        return BudgetCheck(allowed=tuple(planned), refused=(), running_hourly=running, limit=None)
    limit = tightest_limit(budget)
    spent = running
    keep: set[int] = set()
    for index in sorted(range(len(planned)), key=lambda i: Decimal(planned[i].hourly_price)):
        price = Decimal(planned[index].hourly_price)
        if spent + price > limit.hourly:
            break  # the rest cost at least as much
        spent += price
        keep.add(index)
    allowed = tuple(o for i, o in enumerate(planned) if i in keep)
    refused = tuple(o for i, o in enumerate(planned) if i not in keep)
    return BudgetCheck(allowed=allowed, refused=refused, running_hourly=running, limit=limit)


@dataclass(frozen=True)
class BudgetOverrun:
    """Claims that keep billing cost more per hour than the budget allows: what to terminate."""

    limit: BudgetLimit
    running_hourly: Decimal
    terminate: tuple[str, ...]
    remaining_hourly: Decimal

    @property
    def resolved(self) -> bool:
        """Whether terminating `terminate` brings the rate under the ceiling."""
        return self.remaining_hourly <= self.limit.hourly

    def message(self, *, terminating: bool) -> str:
        head = f"budget: ${_money(self.running_hourly)}/h running passes {self.limit.describe()}"
        if not terminating:
            return f"{head}; budgetExceedStrategy AlertOnly: nothing is terminated"
        if not self.terminate:
            return f"{head}; no node can be terminated (do-not-disrupt)"
        names = ", ".join(self.terminate)
        tail = "" if self.resolved else f"; still ${_money(self.remaining_hourly)}/h (do-not-disrupt)"
        return f"{head}; terminating {len(self.terminate)} node(s): {names}{tail}"


def select_budget_terminations(
    budget: Budget | None, billing: Sequence[GPUNodeClaim], candidates: Sequence[GPUNodeClaim]
) -> BudgetOverrun | None:
    """None while the claims that keep `billing` fit the budget; else the first `candidates`
    (a subset of `billing`, in the order they may go) whose termination brings the rate under
    the ceiling — all of them when even that is not enough. BudgetError: an unreadable field."""
    if budget is None:
        return None
    limit = tightest_limit(budget)
    running = sum((claim_hourly(c) for c in billing), Decimal(0))
    if running <= limit.hourly:
        return None
    rate = running
    chosen: list[str] = []
    for claim in candidates:
        if rate <= limit.hourly:
            break
        chosen.append(claim.name)
        rate -= claim_hourly(claim)
    return BudgetOverrun(limit=limit, running_hourly=running, terminate=tuple(chosen), remaining_hourly=rate)
