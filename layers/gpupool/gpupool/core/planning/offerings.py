"""Offerings as the planner reads them: from the catalog, judged by gpuRequirements, in solver units.

Role: `catalog_offerings` (every priced offering of a region as an `OfferingRef`, with the node
labels an instance would carry, so every gpuRequirements key can be judged, and its price's
source; `offering_ref` makes one, for live prices too), `claim_offering`
(the offering a GPUNodeClaim was recorded for, read back off its spec), `offering_matches`
(the pool's gpuRequirements against one offering, `requirements` semantics) and
`solver_candidates` (offerings as integer `selection.Candidate`s: milli-TFLOPS and MiB rounded
down, micro-USD — so a chosen mix always covers what it is counted to cover).

Must not: choose among offerings (`cheapest` does), read files other than through the catalog
loader, read the clock, or perform I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from gpupool.core.catalog import Offering, load_catalog
from gpupool.core.catalog.live import catalog_price_source
from gpupool.core.model.capacity_type import CapacityType, capacity_type
from gpupool.core.model.cloud import Cloud
from gpupool.core.model.common import Requirement
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_REGION,
    KEY_ZONE,
)
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.requirements import labels_match, normalize_capacity_type, offering_labels
from gpupool.core.planning.selection import Candidate
from gpupool.core.quantity import Quantity

__all__ = ["catalog_offerings", "claim_offering", "offering_matches", "offering_ref", "solver_candidates"]


def _ours(spelling: str) -> CapacityType:
    """The catalog speaks Karpenter's capacity types; claims and offerings TensorFusion's."""
    found = capacity_type(spelling)
    assert found is not None, f"the catalog's capacity type {spelling!r}"
    return found


def catalog_offerings(cloud: Cloud, region: str) -> tuple[OfferingRef, ...]:
    """Every priced offering of `region` in the bundled `cloud` catalog, as the planner reads them,
    each naming its price's catalog source."""
    catalog = load_catalog(cloud)
    found = catalog.region(region)
    amounts: dict[str, tuple[Quantity, Quantity]] = {}
    offerings: list[OfferingRef] = []
    for offering in catalog.offerings(region):
        table = found.table(offering.capacity_type) if found else None
        source = catalog_price_source(table) if table else ""
        offerings.append(offering_ref(offering, amounts, price_source=source))
    return tuple(offerings)


def offering_ref(
    offering: Offering,
    amounts: dict[str, tuple[Quantity, Quantity]],
    *,
    price_source: str,
    priced_at: datetime | None = None,
) -> OfferingRef:
    """A catalog-shaped offering as the planner reads it; `amounts` remembers each instance
    type's TFLOPS and VRAM as quantities, worked out once for its ~10 offerings."""
    kind = offering.instance_type
    amount = amounts.get(kind.name)
    if amount is None:
        amount = (Quantity.from_number(kind.tflops), Quantity.parse(f"{kind.vram_gib}Gi"))
        amounts[kind.name] = amount
    tflops, vram = amount
    return OfferingRef(
        instance_type=kind.name,
        region=offering.region,
        zone=offering.zone,
        capacity_type=_ours(offering.capacity_type),
        tflops=tflops,
        vram=vram,
        gpu_count=kind.gpu_count,
        hourly_price=str(offering.hourly_price),
        labels=offering_labels(offering),
        price_source=price_source,
        priced_at=priced_at,
    )


def claim_offering(claim: GPUNodeClaim) -> OfferingRef | None:
    """The offering a claim was recorded for (None when its spec lacks an instance type)."""
    spec = claim.spec
    if not spec.instance_type:
        return None
    return OfferingRef(
        instance_type=spec.instance_type,
        region=spec.region,
        zone=spec.zone,
        capacity_type=spec.capacity_type or "OnDemand",
        tflops=spec.tflops_offered,
        vram=spec.vram_offered,
        gpu_count=spec.gpu_device_offered,
        hourly_price=claim.metadata.annotations.get(ANNOTATION_HOURLY_PRICING, "0"),
    )


_BASIC_KEYS = (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_REGION, KEY_CAPACITY_TYPE)


def offering_matches(offering: OfferingRef, requirements: Sequence[Requirement]) -> bool:
    """Whether the pool's gpuRequirements allow `offering` (`requirements` semantics).

    With the offering's labels every catalog key is judged; without them only instance type,
    zone, region and capacity type are. Raises RequirementError on a malformed requirement."""
    labels = {KEY_INSTANCE_TYPE: offering.instance_type, KEY_CAPACITY_TYPE: offering.capacity_type}
    if offering.zone:
        labels[KEY_ZONE] = offering.zone
    if offering.region:
        labels[KEY_REGION] = offering.region
    labels[KEY_CAPACITY_TYPE] = normalize_capacity_type(labels[KEY_CAPACITY_TYPE])
    labels.update(offering.labels)
    judged = list(requirements)
    if not offering.labels:
        judged = [r for r in judged if r.key in _BASIC_KEYS and r.key in labels]
    return labels_match(labels, judged)


_MILLI = Fraction(1000)  # TFLOPS → integer milli-TFLOPS
_MIB = Fraction(1, 2**20)  # bytes → integer MiB
_MICRO_USD = Decimal(10**6)


def _units(value: Quantity, scale: Fraction) -> int:
    """An offering's size in solver units, rounded down (so a chosen mix never falls short)."""
    scaled = value.value * scale
    return scaled.numerator // scaled.denominator


def solver_candidates(offerings: Sequence[OfferingRef]) -> dict[str, tuple[OfferingRef, Candidate]]:
    """One solver candidate per offering key (first wins), skipping offerings of no size or price."""
    found: dict[str, tuple[OfferingRef, Candidate]] = {}
    for offering in offerings:
        tflops = _units(offering.tflops, _MILLI)
        vram = _units(offering.vram, _MIB)
        price = int(Decimal(offering.hourly_price) * _MICRO_USD)
        if offering.key in found or tflops <= 0 or vram <= 0 or price <= 0:
            continue
        found[offering.key] = (offering, Candidate(name=offering.key, tflops=tflops, vram=vram, price=price))
    return found
