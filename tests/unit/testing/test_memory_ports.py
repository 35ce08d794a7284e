"""The in-memory ports as the simulation uses them: a clock that never goes back, exact call
counts with the call log off, and the package names the service tests' fakes re-export."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpupool.testing.memory_ports import START, MemoryClock, MemoryCluster, MemoryCompute
from tests.service import fakes


def test_the_clock_moves_forward_only() -> None:
    clock = MemoryClock()
    clock.set(START + timedelta(minutes=5))
    clock.advance(timedelta(seconds=30))
    assert clock.now() == START + timedelta(minutes=5, seconds=30)
    with pytest.raises(ValueError, match="cannot go back"):
        clock.set(START)
    assert clock.now() == START + timedelta(minutes=5, seconds=30)


def test_counts_stay_exact_without_the_call_log() -> None:
    cluster = MemoryCluster(MemoryClock())
    cluster.keep_calls = False
    for _ in range(3):
        cluster.list_claims()
    assert cluster.count("list_claims") == 3
    assert cluster.calls == []


def test_the_service_fakes_are_the_package_ports() -> None:
    assert fakes.FakeClock is MemoryClock
    assert fakes.FakeCompute is MemoryCompute
    assert fakes.FakeCluster is MemoryCluster
