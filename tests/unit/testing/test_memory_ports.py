"""The in-memory ports as the simulation uses them: a clock that never goes back, exact call
counts with the call log off, the package names the service tests' fakes re-export, and Events
naming their object by uid and resourceVersion as the Kubernetes adapter does."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpupool.core.model.pool import GPUPool
from gpupool.service.ports import ObjectEvent
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


def test_an_event_names_its_object_by_uid_as_the_adapter_does() -> None:
    cluster = MemoryCluster(MemoryClock())
    pool = cluster.create_pool(GPUPool.model_validate({"metadata": {"name": "pool-a"}}))

    def compaction(name: str) -> None:
        cluster.record_event(
            ObjectEvent(
                kind="GPUPool",
                name=name,
                namespace=None,
                event_type="Normal",
                reason="Compaction",
                message="m",
            )
        )

    compaction("pool-a")
    compaction("pool-a")
    compaction("gone")
    found, missing = cluster.events
    assert (found["uid"], found["resourceVersion"], found["count"]) == (
        pool.metadata.uid,
        pool.metadata.resource_version,
        2,
    )
    assert found["uid"]
    assert (missing["uid"], missing["resourceVersion"]) == (None, None)
    del cluster.objects["GPUPool"]["pool-a"]  # recreated under its name: a new uid, Events of its own
    cluster.create_pool(GPUPool.model_validate({"metadata": {"name": "pool-a"}}))
    compaction("pool-a")
    assert [e["count"] for e in cluster.events_with("Compaction") if e["name"] == "pool-a"] == [2, 1]
