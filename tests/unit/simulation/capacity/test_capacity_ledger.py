"""The ledger's figures: cost and GPU-hours per second of an instance's life, time to capacity
from the first placement only, unserved pods, the peak hourly rate."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpupool.simulation.capacity.ledger import InstanceRecord, Ledger, percentile


def test_cost_and_gpu_hours_follow_each_instance_life() -> None:
    ledger = Ledger("p")
    ledger.launched(InstanceRecord("i-1", "t/z/OnDemand", 1, Decimal("0.50"), launched=0))
    ledger.launched(InstanceRecord("i-2", "t4/z/Spot", 4, Decimal("2.00"), launched=1800))
    assert ledger.peak_hourly_rate == Decimal("2.50")
    ledger.ended("i-1", 3600)
    ledger.ended("i-1", 7200)  # ended twice: counted once
    report = ledger.report(until=5400, pods=0, violations={})
    assert report.cost == pytest.approx(0.5 * 1 + 2.0 * 1)
    assert report.gpu_hours_bought == pytest.approx(1 * 1 + 4 * 1)
    assert report.counters == {"launches": 2, "terminations": 1}


def test_time_to_capacity_counts_a_pod_once_and_unserved_are_the_rest() -> None:
    ledger = Ledger("p")
    for pod, waited in (("a", 0.0), ("b", 30.0), ("a", 500.0), ("c", 90.0)):
        ledger.placed(pod, waited)
    report = ledger.report(until=100, pods=5, violations={"pastMax": 0})
    assert report.ttc_max == 90.0 and report.unserved == 2
    assert report.to_json()["p50TimeToCapacitySeconds"] == 30.0


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.95) == 95.0
    assert percentile(values, 0.5) == 50.0
    assert percentile([], 0.5) is None


def test_budget_reasons_are_kept_few_and_distinct() -> None:
    ledger = Ledger("p")
    for n in range(20):
        ledger.refused(f"reason {n % 7}")
    assert ledger.budget_refusals == 20
    assert ledger.budget_reasons == [f"reason {n}" for n in range(5)]
