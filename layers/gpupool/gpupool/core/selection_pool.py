"""A pool's capacity plan: the gap, the offerings its gpuRequirements allow, the cheapest mix.

Role: glue the pure pieces — `capacity` (gap and headroom), `requirements` (which offerings),
`selection` (exact cheapest mix) — into a `CapacityPlan`: nodes to add as (instance type, zone,
capacity type, count, hourly price), the hourly cost, and the reasons a human reads.

Offerings that differ only by zone are one candidate (prices are per region): the planned zone is
None when every zone of the region is allowed (the launcher's subnets decide), else the first
allowed zone by name. Units for the solver: milli-TFLOPS, MiB, micro-USD — needs rounded up and
headroom rounded down, so a chosen mix always covers the need and never passes max.

Must not: read files, the clock or a cloud; the caller passes the catalog and the region.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from gpupool.core.capacity import MAX_RESOURCE_CONSTRAINT_REACHED, CapacityGap
from gpupool.core.catalog.model import CapacityType, Catalog, InstanceType, Offering
from gpupool.core.requirements import RequirementLike, select_matching
from gpupool.core.selection import DEFAULT_MAX_NODES, Candidate, select_cheapest

__all__ = [
    "CapacityPlan",
    "PlannedNodes",
    "candidate_for",
    "offering_candidates",
    "plan_pool_capacity",
    "solver_units",
]

_MILLI = 1000
_MIB = 2**20


@dataclass(frozen=True, slots=True)
class PlannedNodes:
    instance_type: InstanceType
    zone: str | None
    capacity_type: CapacityType
    count: int
    hourly_price: Decimal


@dataclass(frozen=True, slots=True)
class CapacityPlan:
    gap: CapacityGap
    nodes: tuple[PlannedNodes, ...]
    reasons: tuple[str, ...]

    @property
    def hourly_cost(self) -> Decimal:
        return sum((n.hourly_price * n.count for n in self.nodes), Decimal(0))


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def _floor(value: Fraction) -> int:
    return value.numerator // value.denominator


def solver_units(gap: CapacityGap) -> dict[str, int | None]:
    """The gap in the solver's integer units: need rounded up, headroom rounded down."""
    return {
        "need_tflops": _ceil(gap.need.tflops * _MILLI),
        "need_vram": _ceil(gap.need.vram / _MIB),
        "cap_tflops": None if gap.headroom_tflops is None else _floor(gap.headroom_tflops * _MILLI),
        "cap_vram": None if gap.headroom_vram is None else _floor(gap.headroom_vram / _MIB),
    }


def candidate_for(instance_type: InstanceType, capacity_type: str, price: Decimal) -> Candidate:
    tflops = instance_type.tflops * _MILLI
    if tflops.denominator != 1:
        raise ValueError(f"{instance_type.name}: TFLOPS finer than 0.001")
    return Candidate(
        name=f"{instance_type.name}/{capacity_type}",
        tflops=int(tflops),
        vram=instance_type.vram_gib * 1024,
        price=int(price * 10**6),
    )


def offering_candidates(
    offerings: Sequence[Offering], excluded: frozenset[tuple[str, str, str]] = frozenset()
) -> tuple[list[Candidate], dict[str, list[Offering]]]:
    """One solver candidate per (instance type, capacity type), with the zones it stands for."""
    groups: dict[str, list[Offering]] = {}
    candidates: list[Candidate] = []
    for offering in offerings:
        if (offering.instance_type.name, offering.zone, offering.capacity_type) in excluded:
            continue
        candidate = candidate_for(offering.instance_type, offering.capacity_type, offering.hourly_price)
        if candidate.name not in groups:
            candidates.append(candidate)
        groups.setdefault(candidate.name, []).append(offering)
    return candidates, groups


def _shortfall_reasons(gap: CapacityGap, reasons: list[str], nodes: int, max_nodes: int) -> list[str]:
    found: list[str] = []
    bounded = gap.headroom_tflops is not None or gap.headroom_vram is not None
    if bounded and not any(r.startswith(MAX_RESOURCE_CONSTRAINT_REACHED) for r in reasons):
        found.append(f"{MAX_RESOURCE_CONSTRAINT_REACHED}: no mix of nodes covers the gap under maxResources")
    if nodes >= max_nodes:
        found.append(f"the gap needs more than {max_nodes} nodes; planned the best {max_nodes} can do")
    found.append("the plan covers part of the gap: filled what maxResources and the node limit allow")
    return found


def plan_pool_capacity(
    gap: CapacityGap,
    catalog: Catalog,
    *,
    region: str,
    requirements: Sequence[RequirementLike] = (),
    excluded: frozenset[tuple[str, str, str]] = frozenset(),
    max_nodes: int = DEFAULT_MAX_NODES,
    accelerate: bool = True,
) -> CapacityPlan:
    """Nodes to add for `gap` in `region`; `excluded` holds (instance type, zone, capacity type)
    offerings known to be unavailable right now (insufficient capacity); `accelerate=False`
    keeps the selection in pure Python even when highspy is installed."""
    reasons = list(gap.reasons)
    if gap.empty:
        return CapacityPlan(gap, (), (*reasons, "no capacity gap: nothing to add"))
    region_prices = catalog.region(region)
    if region_prices is None:
        raise ValueError(
            f"region {region!r} is not in the {catalog.cloud} catalog ({', '.join(catalog.region_names)})"
        )
    matching = select_matching(catalog.offerings(region), requirements)
    reasons.extend(matching.ignored)
    candidates, by_name = offering_candidates(matching.offerings, excluded)
    if not candidates:
        return CapacityPlan(gap, (), (*reasons, "no priced offering matches the pool's gpuRequirements"))
    units = solver_units(gap)
    selection = select_cheapest(
        candidates,
        need_tflops=units["need_tflops"] or 0,
        need_vram=units["need_vram"] or 0,
        cap_tflops=units["cap_tflops"],
        cap_vram=units["cap_vram"],
        max_nodes=max_nodes,
        accelerate=accelerate,
    )
    all_zones = set(region_prices.zones)
    nodes = []
    for candidate, count in selection.counts:
        group = by_name[candidate.name]
        allowed = sorted(o.zone for o in group)
        first = group[0]
        zone = None if set(allowed) == all_zones else allowed[0]
        nodes.append(PlannedNodes(first.instance_type, zone, first.capacity_type, count, first.hourly_price))
    if not selection.covers_need:
        reasons.extend(_shortfall_reasons(gap, reasons, selection.nodes, max_nodes))
    if not selection.proven_optimal:
        reasons.append("SelectionNotProvenOptimal: the search hit its effort limit; best plan found is used")
    return CapacityPlan(gap, tuple(nodes), tuple(reasons))
