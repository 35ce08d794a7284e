"""AutoSelect's budget: price expansion NodeClaims and admit new ones under the pool's ceiling.

Role: an AutoSelect pool's spending is the expansion NodeClaims it asked Karpenter for (marked
with `gpupool.io/expansion-pool=<pool>`). Each is priced at the hourly price recorded on it when
it was made (`tensor-fusion.ai/hourly-pricing`), or else at the highest catalog price its
requirements allow — Karpenter picks the capacity type, so the dearest allowed one is assumed and
the ceiling can never be passed by its choice. `ExpansionSpending` starts from what the pool's
live expansions cost and admits a new one only while the total stays at or under the tightest
budget ceiling (`planning.budget`: the same hourly reading of `budgetPerDay` / `budgetPerMonth` /
`budgetPerQuarter` as the other modes). A candidate without a known price is not admitted while a
budget is set: it could cost anything. An existing expansion without a recorded or catalog
price (made before the budget, of a type the catalog dropped) counts as $0: nothing says more.
Expansions are never terminated for the budget (they are made `do-not-disrupt`), so
`AlertAndTerminateVM` behaves as `AlertOnly` here.

Must not: perform I/O, read the clock, or choose candidates (`decisions.autoselect` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from gpupool.core.model.capacity_type import capacity_type
from gpupool.core.model.constants import ANNOTATION_HOURLY_PRICING, KEY_CAPACITY_TYPE
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterRequirement
from gpupool.core.model.pool import Budget
from gpupool.core.planning.budget import BudgetLimit, tightest_limit
from gpupool.core.planning.plan import OfferingRef

__all__ = [
    "ANNOTATION_EXPANSION_POOL",
    "ExpansionSpending",
    "affordable_candidate",
    "candidate_hourly",
    "candidate_offering",
    "expansion_hourly",
    "expansion_spending",
]

ANNOTATION_EXPANSION_POOL = "gpupool.io/expansion-pool"  # the GPUPool an expansion NodeClaim bills to


def _allowed_capacity_types(requirements: Iterable[KarpenterRequirement]) -> frozenset[str] | None:
    """The offering capacity types (OnDemand / Spot / Reserved) an `In` requirement allows; None: any."""
    for requirement in requirements:
        if requirement.key == KEY_CAPACITY_TYPE and requirement.operator == "In":
            return frozenset(capacity_type(v) or v for v in requirement.values)
    return None


def candidate_offering(
    instance_type: str,
    zone: str,
    requirements: Iterable[KarpenterRequirement],
    offerings: Sequence[OfferingRef],
) -> OfferingRef | None:
    """The highest-priced offering of `instance_type` in `zone` whose capacity type the
    requirements allow (what Karpenter may launch, priced at the worst case); None when the
    catalog prices none of them."""
    allowed = _allowed_capacity_types(requirements)
    matching = [
        o
        for o in offerings
        if o.instance_type == instance_type
        and o.zone in (None, zone)
        and (allowed is None or o.capacity_type in allowed)
    ]
    return max(matching, key=lambda o: Decimal(o.hourly_price), default=None)


def candidate_hourly(
    instance_type: str,
    zone: str,
    requirements: Iterable[KarpenterRequirement],
    offerings: Sequence[OfferingRef],
) -> Decimal | None:
    """`candidate_offering`'s price per hour; None when the catalog prices none."""
    offering = candidate_offering(instance_type, zone, requirements, offerings)
    return Decimal(offering.hourly_price) if offering is not None else None


def expansion_hourly(nodeclaim: KarpenterNodeClaim, offerings: Sequence[OfferingRef]) -> Decimal | None:
    """What an expansion NodeClaim costs per hour: its recorded price, else its catalog price."""
    recorded = nodeclaim.metadata.annotations.get(ANNOTATION_HOURLY_PRICING)
    if recorded is not None:
        try:
            return Decimal(recorded)
        except InvalidOperation:
            pass
    narrowed = {r.key: r.values[0] for r in nodeclaim.spec.requirements if r.operator == "In" and r.values}
    instance_type = narrowed.get("node.kubernetes.io/instance-type")
    zone = narrowed.get("topology.kubernetes.io/zone")
    if instance_type is None or zone is None:
        return None
    return candidate_hourly(instance_type, zone, nodeclaim.spec.requirements, offerings)


@dataclass
class ExpansionSpending:
    """The pool's expansion run rate against its ceiling, growing as expansions are admitted."""

    limit: BudgetLimit
    running: Decimal
    admitted: Decimal = Decimal(0)
    refused: int = 0

    def admit(self, price: Decimal | None) -> bool:
        """Count `price` in when it keeps the rate at or under the ceiling; False otherwise, or
        when the price is unknown."""
        if price is None or self.running + self.admitted + price > self.limit.hourly:
            return False
        self.admitted += price
        return True

    def message(self, pods: int) -> str:
        money = f"{(self.running + self.admitted).quantize(Decimal('0.001')):f}"
        return (
            f"budget: ${money}/h of expansion NodeClaims leaves no room under {self.limit.describe()} "
            f"for another node (or its price is unknown); {pods} pod(s) not expanded"
        )


def affordable_candidate(
    candidates: Sequence[tuple[str, str]],
    requirements: Sequence[KarpenterRequirement],
    offerings: Sequence[OfferingRef],
    spending: ExpansionSpending | None,
) -> tuple[tuple[str, str], Decimal | None] | None:
    """The first (instance type, zone) candidate `spending` admits, with its price; without a
    budget, the first candidate (its price when known). None, counted as refused, when the budget
    admits none."""
    for instance_type, zone in candidates:
        price = candidate_hourly(instance_type, zone, requirements, offerings)
        if spending is None or spending.admit(price):
            return (instance_type, zone), price
    if spending is not None:
        spending.refused += 1
    return None


def expansion_spending(
    budget: Budget | None,
    pool: str,
    nodeclaims: Sequence[KarpenterNodeClaim],
    offerings: Sequence[OfferingRef],
) -> ExpansionSpending | None:
    """The pool's expansion spending (None without a budget). Counts every expansion of `pool`
    there is (Karpenter deletes one it cannot launch; a deleting one may still bill).
    Raises BudgetError for an unreadable budget field."""
    if budget is None:
        return None
    running = Decimal(0)
    for nodeclaim in nodeclaims:
        if nodeclaim.metadata.annotations.get(ANNOTATION_EXPANSION_POOL) == pool:
            running += expansion_hourly(nodeclaim, offerings) or Decimal(0)
    return ExpansionSpending(limit=tightest_limit(budget), running=running)
