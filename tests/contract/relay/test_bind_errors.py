"""The hub's bind tells a failed write from a bug: a write the API server refuses becomes
BindFailed (the scheduler retries), a programming error in the writer surfaces as itself; in both
cases the reservation is released and the GPU annotation cleared."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.ports import BindFailed

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, gpu_model, pool_model, tf_pod


def _hub() -> tuple[SchedulerHub, FakeWriter]:
    writer = FakeWriter()
    hub = SchedulerHub(writer)
    hub.apply_pool(pool_model())
    hub.apply_gpu(gpu_model("a-0", "a", available_tflops="100"))
    writer.add(tf_pod("p"))
    return hub, writer


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        (RuntimeError("409 Conflict"), BindFailed),
        (OSError("connection reset"), BindFailed),
        (TypeError("bug"), TypeError),
    ],
)
def test_a_failed_bind_releases_the_reservation_and_only_api_failures_become_bind_failed(
    error: Exception, raised: type[Exception]
) -> None:
    hub, writer = _hub()
    writer.fail_next_bind = error
    with pytest.raises(raised):
        hub.bind("team", "p", "uid-p", "a")
    assert hub.allocator.state.allocations == {}
    assert "tensor-fusion.ai/gpu-ids" not in writer.pods["team/p"]["metadata"]["annotations"]
