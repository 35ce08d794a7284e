"""The hub's bind tells a failed write from a bug: a write the API server refuses becomes
BindFailed (the scheduler retries), a programming error in the writer surfaces as itself; in both
cases the reservation is released and the GPU annotation cleared. A pod that is not
tensor-fusion-scheduler's is refused before anything is reserved or written."""

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


@pytest.mark.parametrize("scheduler", [None, "default-scheduler", "my-scheduler"])
def test_bind_refuses_a_pod_that_is_not_tensor_fusion_schedulers(scheduler: str | None) -> None:
    """A caller on the loopback port (a port-forward) cannot have the relay bind someone else's pod."""
    hub, writer = _hub()
    nginx = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "web", "uid": "uid-nginx", "annotations": {}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
    }
    if scheduler is not None:
        nginx["spec"]["schedulerName"] = scheduler
    writer.add(nginx)
    with pytest.raises(
        BindFailed, match=f"scheduled by {scheduler or 'default-scheduler'}, not tensor-fusion"
    ):
        hub.bind("web", "nginx", "uid-nginx", "a")
    assert "nodeName" not in writer.pods["web/nginx"]["spec"] and writer.pods["web/nginx"]["metadata"] == {
        **nginx["metadata"]
    }
    assert hub.allocator.state.allocations == {}
