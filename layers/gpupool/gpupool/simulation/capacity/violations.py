"""The invariants a capacity policy must keep, checked on what a run's world looked like.

Role: `StateSample` is one look at a pool after a policy decided (each simulated minute):
the capacity of its live instances (TFLOPS / VRAM GiB, every instance not ended and not under an
interruption notice — in flight included, as both policies count in-flight capacity), the
live instances by the claim they serve, and the claims that exist. `ViolationDetector` counts:
- `pastMax`: minutes in which live capacity exceeds maxResources (either dimension);
- `belowMin`: minutes after the warm-up in which live capacity is under minResources;
- `orphanInstances`: instances alive past the orphan grace (10 min) with no claim, each once;
- `duplicateClaims`: claims served by more than one live instance at once, each once.

Must not: read either policy's internals (drivers build the samples from what they own).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

__all__ = ["Limits", "StateSample", "ViolationDetector"]

ORPHAN_GRACE_SECONDS = 600.0


@dataclass(frozen=True)
class Limits:
    """minResources and maxResources as (TFLOPS, VRAM GiB); max None: unbounded."""

    min_tflops: Decimal
    min_vram: Decimal
    max_tflops: Decimal | None
    max_vram: Decimal | None
    warm_up_seconds: float = 1800.0


@dataclass(frozen=True)
class StateSample:
    at: float  # seconds from the start
    tflops: Decimal
    vram: Decimal
    instance_claims: Mapping[str, str | None]  # live instance → the claim it serves (None: none)
    claims: frozenset[str]


@dataclass
class ViolationDetector:
    limits: Limits
    counts: Counter[str] = field(default_factory=Counter)
    _orphan_since: dict[str, float] = field(default_factory=dict)
    _orphans: set[str] = field(default_factory=set)
    _duplicates: set[str] = field(default_factory=set)
    examples: list[str] = field(default_factory=list)

    def _count(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        if len(self.examples) < 10:
            self.examples.append(example)

    def check(self, sample: StateSample) -> None:
        limits = self.limits
        over_t = limits.max_tflops is not None and sample.tflops > limits.max_tflops
        over_v = limits.max_vram is not None and sample.vram > limits.max_vram
        if over_t or over_v:
            self._count("pastMax", f"{sample.at:.0f}s: {sample.tflops} TFLOPS / {sample.vram} GiB past max")
        under = sample.tflops < limits.min_tflops or sample.vram < limits.min_vram
        if under and sample.at >= limits.warm_up_seconds:
            self._count("belowMin", f"{sample.at:.0f}s: {sample.tflops} TFLOPS / {sample.vram} GiB under min")
        served: Counter[str] = Counter()
        for instance, claim in sample.instance_claims.items():
            if claim is not None and claim in sample.claims:
                self._orphan_since.pop(instance, None)
                served[claim] += 1
                continue
            since = self._orphan_since.setdefault(instance, sample.at)
            if sample.at - since > ORPHAN_GRACE_SECONDS and instance not in self._orphans:
                self._orphans.add(instance)
                self._count("orphanInstances", f"{sample.at:.0f}s: {instance} has no claim")
        for claim, count in served.items():
            if count > 1 and claim not in self._duplicates:
                self._duplicates.add(claim)
                self._count("duplicateClaims", f"{sample.at:.0f}s: claim {claim} has {count} instances")

    def result(self) -> dict[str, int]:
        return {
            kind: self.counts.get(kind, 0)
            for kind in ("pastMax", "belowMin", "orphanInstances", "duplicateClaims")
        }
