"""The violation detector counts what a violating history shows, and nothing in a clean one."""

from __future__ import annotations

from decimal import Decimal

from gpupool.simulation.capacity.violations import Limits, StateSample, ViolationDetector

LIMITS = Limits(
    min_tflops=Decimal(130),
    min_vram=Decimal(32),
    max_tflops=Decimal(500),
    max_vram=Decimal(100),
    warm_up_seconds=600,
)


def _sample(
    at: float, tflops: int, vram: int, instances: dict[str, str | None], claims: set[str]
) -> StateSample:
    return StateSample(at, Decimal(tflops), Decimal(vram), instances, frozenset(claims))


def test_a_clean_history_counts_nothing() -> None:
    detector = ViolationDetector(LIMITS)
    for minute in range(30):
        detector.check(_sample(minute * 60.0, 130, 32, {"i-1": "c-1", "i-2": "c-2"}, {"c-1", "c-2"}))
    assert detector.result() == {"pastMax": 0, "belowMin": 0, "orphanInstances": 0, "duplicateClaims": 0}


def test_a_violating_history_is_counted_by_kind() -> None:
    detector = ViolationDetector(LIMITS)
    history = [
        _sample(0, 0, 0, {}, set()),  # under min, but during the warm-up: allowed
        _sample(60, 520, 64, {"i-1": "c-1"}, {"c-1"}),  # past max TFLOPS
        _sample(120, 200, 120, {"i-1": "c-1"}, {"c-1"}),  # past max VRAM
        _sample(700, 65, 16, {"i-1": "c-1", "i-9": None}, {"c-1"}),  # under min after warm-up; i-9 no claim
        _sample(1200, 130, 32, {"i-1": "c-1", "i-9": None}, {"c-1"}),  # i-9 still within the grace
        _sample(1320, 130, 32, {"i-1": "c-1", "i-9": None}, {"c-1"}),  # i-9 past the 10-minute grace
        _sample(1380, 130, 32, {"i-1": "c-1", "i-9": None}, {"c-1"}),  # the same orphan: counted once
        _sample(1440, 195, 48, {"i-1": "c-1", "i-2": "c-1", "i-3": "gone"}, {"c-1"}),  # duplicate claim
        _sample(1500, 195, 48, {"i-1": "c-1", "i-2": "c-1"}, {"c-1"}),  # the same duplicate: once
    ]
    for sample in history:
        detector.check(sample)
    assert detector.result() == {"pastMax": 2, "belowMin": 1, "orphanInstances": 1, "duplicateClaims": 1}
    assert any("i-9 has no claim" in example for example in detector.examples)


def test_an_instance_whose_claim_appears_within_the_grace_is_no_orphan() -> None:
    detector = ViolationDetector(LIMITS)
    detector.check(_sample(0, 130, 32, {"i-1": "c-1"}, set()))
    detector.check(_sample(300, 130, 32, {"i-1": "c-1"}, {"c-1"}))
    detector.check(_sample(900, 130, 32, {"i-1": "c-1"}, {"c-1"}))
    assert detector.result()["orphanInstances"] == 0


def test_an_unbounded_max_is_never_passed() -> None:
    detector = ViolationDetector(Limits(Decimal(0), Decimal(0), None, None))
    detector.check(_sample(0, 10**6, 10**6, {}, set()))
    assert detector.result()["pastMax"] == 0
