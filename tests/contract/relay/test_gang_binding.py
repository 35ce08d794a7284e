"""Gang scheduling through the relay's bind verb: a gang of 4 with gang-min-members 4 binds all
four or none, a member retried after the gang completed binds on its node, and gang-timeout
releases a partial gang's GPUs."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpupool.scheduler.extender import parse_extender_args
from gpupool_incluster.relay.gangs import GangGate
from gpupool_incluster.relay.hub import BindFailed, SchedulerHub

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, gpu_model, pool_model, tf_pod

T = "tensor-fusion.ai/"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def gang_pod(index: int, *, timeout: str = "60s") -> dict[str, Any]:
    extra = {T + "gang-min-members": "4", T + "gang-timeout": timeout}
    pod = tf_pod(f"w{index}", tflops="10", vram="1Gi", extra=extra)
    pod["metadata"]["labels"][T + "workload"] = "train"
    return pod


@pytest.fixture
def world() -> tuple[SchedulerHub, FakeWriter, Clock]:
    writer, clock = FakeWriter(), Clock()
    hub = SchedulerHub(writer)
    hub.gangs = GangGate(now=clock)
    hub.apply_pool(pool_model())
    for index in range(4):
        hub.apply_gpu(gpu_model(f"a-{index}", "a", index=index))
    for index in range(4):
        writer.add(gang_pod(index))
    return hub, writer, clock


def bound(writer: FakeWriter) -> list[str]:
    return sorted(key for key, pod in writer.pods.items() if pod["spec"].get("nodeName"))


def test_a_gang_of_four_binds_all_four_or_none(world: tuple[SchedulerHub, FakeWriter, Clock]) -> None:
    hub, writer, _ = world
    for index in range(3):
        with pytest.raises(BindFailed, match=r"gang team/train: waiting for \d more member"):
            hub.bind("team", f"w{index}", f"uid-w{index}", "a")
        assert bound(writer) == [], "no member binds before the gang is complete"
    assert len(hub.allocator.state.allocations) == 3, "waiting members keep their GPUs"
    hub.bind("team", "w3", "uid-w3", "a")
    for index in range(3):  # kube-scheduler retries the members it was told to wait
        hub.bind("team", f"w{index}", f"uid-w{index}", "a")
    assert bound(writer) == [f"team/w{index}" for index in range(4)]


def test_a_waiting_member_is_filtered_to_the_node_holding_its_gpus(
    world: tuple[SchedulerHub, FakeWriter, Clock],
) -> None:
    hub, writer, _ = world
    hub.apply_gpu(gpu_model("b-0", "b"))
    with pytest.raises(BindFailed):
        hub.bind("team", "w0", "uid-w0", "a")
    result = hub.filter(parse_extender_args({"Pod": writer.pods["team/w0"], "NodeNames": ["a", "b"]}))
    assert result["NodeNames"] == ["a"]
    assert "waiting for its gang" in result["FailedNodes"]["b"]


def test_the_timeout_releases_a_partial_gang(world: tuple[SchedulerHub, FakeWriter, Clock]) -> None:
    hub, writer, clock = world
    for index in range(3):
        with pytest.raises(BindFailed):
            hub.bind("team", f"w{index}", f"uid-w{index}", "a")
    clock.now += timedelta(seconds=61)
    with pytest.raises(BindFailed, match="waiting for 3 more member"):
        hub.bind("team", "w3", "uid-w3", "a")  # the old partial gang is gone: w3 starts a new one
    assert list(hub.allocator.state.allocations) == ["team/w3"], "the timed-out members' GPUs are free"
    assert bound(writer) == []
