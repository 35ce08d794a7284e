"""The one capacity pipeline: from a pool snapshot and priced offerings to the nodes to add.

Role: `plan_capacity(snapshot, offerings, now=..., max_nodes=...)` — the pool's gap (`gap`, from
`snapshot.pool_capacity`'s one accounting), the offerings its gpuRequirements allow minus those
remembered as out of capacity, the exact cheapest mix (`cheapest.select_cheapest`, in integer
milli-TFLOPS, MiB and micro-USD: needs rounded up, headroom rounded down, so a chosen mix always
covers the gap and never passes max) and its nodes spread over same-price zones. The launch
decision, `gpupool plan` and `benchmarks/plan_cost.py` all call this function, so they agree.

Must not: build claims or actions (the launch decision does), read the clock or perform I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from gpupool.core.model.claim_state import claim_phase
from gpupool.core.planning.cheapest import DEFAULT_MAX_NODES, select_cheapest
from gpupool.core.planning.gap import MAX_RESOURCE_CONSTRAINT_REACHED, CapacityGap, capacity_gap
from gpupool.core.planning.offerings import offering_matches, solver_candidates
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.selection import Selection
from gpupool.core.planning.snapshot import PoolSnapshot, pool_capacity
from gpupool.core.planning.unavailable import unavailable_offerings
from gpupool.core.planning.zone_spread import spread_across_zones

__all__ = [
    "NO_ROOM",
    "SELECTION_NOT_PROVEN",
    "CapacityPlan",
    "SolverUnits",
    "plan_capacity",
    "solver_units",
]

NO_ROOM = "capacity is wanted but maxResources leaves no room"
SELECTION_NOT_PROVEN = "SelectionNotProvenOptimal: the search hit its effort limit; best plan found is used"

_MILLI = 1000
_MIB = 2**20


@dataclass(frozen=True, slots=True)
class SolverUnits:
    """A gap in the solver's integer units: need rounded up, headroom rounded down (None: no max)."""

    need_tflops: int
    need_vram: int
    cap_tflops: int | None
    cap_vram: int | None


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def _floor(value: Fraction) -> int:
    return value.numerator // value.denominator


def solver_units(gap: CapacityGap) -> SolverUnits:
    return SolverUnits(
        need_tflops=_ceil(gap.need.tflops * _MILLI),
        need_vram=_ceil(gap.need.vram / _MIB),
        cap_tflops=None if gap.headroom_tflops is None else _floor(gap.headroom_tflops * _MILLI),
        cap_vram=None if gap.headroom_vram is None else _floor(gap.headroom_vram / _MIB),
    )


@dataclass(frozen=True, slots=True)
class CapacityPlan:
    """What the pool should add: `offerings` holds one entry per node, in launch order.

    `matching` counts the offerings gpuRequirements allow (before the out-of-capacity memory);
    `selection` is the solver's answer (None when nothing was selected: no gap, no room, no
    match); `reasons` say why, for a human.
    """

    gap: CapacityGap
    offerings: tuple[OfferingRef, ...] = ()
    matching: int = 0
    selection: Selection | None = None
    reasons: tuple[str, ...] = ()

    @property
    def covers_gap(self) -> bool:
        return self.selection is not None and self.selection.covers_need

    @property
    def proven_optimal(self) -> bool:
        return self.selection is None or self.selection.proven_optimal

    @property
    def hourly_cost(self) -> Decimal:
        return sum((Decimal(o.hourly_price) for o in self.offerings), Decimal(0))


def plan_capacity(
    snapshot: PoolSnapshot,
    offerings: Sequence[OfferingRef],
    *,
    now: datetime,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> CapacityPlan:
    """The nodes that close the pool's gap at the least hourly cost (see the module docstring).

    Raises RequirementError when the pool's gpuRequirements cannot be evaluated."""
    pool = snapshot.pool
    gap = capacity_gap(pool, pool_capacity(snapshot))
    if gap.empty and not gap.clipped:
        return CapacityPlan(gap, reasons=("no capacity gap: nothing to add",))
    if gap.empty or gap.max_reached:
        return CapacityPlan(gap, reasons=(*gap.reasons, NO_ROOM))
    provisioner = pool.spec.node_manager_config.node_provisioner
    requirements = provisioner.gpu_requirements if provisioner else []
    matching = [o for o in offerings if offering_matches(o, requirements)]
    blocked = unavailable_offerings(pool, now)
    candidates = solver_candidates([o for o in matching if o.key not in blocked])
    if not candidates:
        if matching:
            why = f"all {len(matching)} matching offerings are out of capacity for now"
        else:
            why = "no priced offering matches the pool's gpuRequirements"
        return CapacityPlan(gap, matching=len(matching), reasons=(*gap.reasons, why))
    units = solver_units(gap)
    selection = select_cheapest(
        [candidate for _, candidate in candidates.values()],
        need_tflops=units.need_tflops,
        need_vram=units.need_vram,
        cap_tflops=units.cap_tflops,
        cap_vram=units.cap_vram,
        max_nodes=max_nodes,
    )
    chosen = [candidates[c.name][0] for c, count in selection.counts for _ in range(count)]
    live_zones = (c.spec.zone for c in snapshot.claims if c.spec.zone and claim_phase(c) != "Failed")
    twins = [offering for offering, _ in candidates.values()]
    spread = spread_across_zones(chosen, twins, zones_in_use=live_zones)
    reasons = list(gap.reasons)
    if not selection.covers_need:
        if (gap.headroom_tflops is not None or gap.headroom_vram is not None) and not gap.clipped:
            reasons.append(f"{MAX_RESOURCE_CONSTRAINT_REACHED}: no mix of nodes covers the gap under max")
        if selection.nodes >= max_nodes:
            reasons.append(f"the gap needs more than {max_nodes} nodes; planned the best {max_nodes} can do")
        reasons.append("the plan covers part of the gap: filled what maxResources and the node limit allow")
    if not selection.proven_optimal:
        reasons.append(SELECTION_NOT_PROVEN)
    return CapacityPlan(gap, spread, matching=len(matching), selection=selection, reasons=tuple(reasons))
