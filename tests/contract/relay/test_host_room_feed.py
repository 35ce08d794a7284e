"""The hub feeds the allocator what each node has left for pods, and the pods' own requests.

From the Node and Pod watches: a Node's allocatable CPU and memory minus the requests of every
pod bound to it (a plain pod's too: the GPUs' neighbours use the node's CPU as well), updated
when a pod binds, finishes or goes, unknown again when the Node goes; and a TensorFusion pod's
container requests reach the allocator with its GPU request, so BalancedFit's demand reads a
CPU per GPU in the extender as in the simulator.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gpupool.core.allocator import PlacementMode, PlacementPolicy
from gpupool.core.allocator.state import HOST_UNKNOWN
from gpupool.core.model.foreign import Node, Pod
from gpupool_incluster.relay.hub import HubSettings, SchedulerHub

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, gpu_model, pool_model, tf_pod

GI = 1 << 30


def _node(name: str, cpu: str, memory: str) -> Node:
    return Node.model_validate(
        {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": memory}}}
    )


def _plain(name: str, node: str, cpu: str, memory: str, phase: str = "Running") -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "web"},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            },
            "status": {"phase": phase},
        }
    )


def _with_requests(pod: dict[str, Any], cpu: str, memory: str) -> dict[str, Any]:
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
    return pod


def _hub() -> tuple[SchedulerHub, FakeWriter]:
    writer = FakeWriter()
    hub = SchedulerHub(writer, HubSettings(policy=PlacementPolicy(mode=PlacementMode.BALANCED_FIT)))
    hub.apply_pool(pool_model())
    for node in ("a", "b"):
        hub.apply_gpu(gpu_model(f"{node}-0", node))
    return hub, writer


def test_allocatable_minus_the_bound_pods_requests_reaches_the_allocator() -> None:
    hub, _ = _hub()
    state = hub.allocator.state
    assert "a" not in state.host_free  # nothing known before the Node is seen
    hub.apply_node(_node("a", "8", "64Gi"))
    hub.apply_node(_node("b", "64", "256Gi"))
    assert state.host_free["a"] == (8_000, 64 * GI)
    hub.apply_pod(_plain("web-1", "a", "6", "16Gi"))
    assert state.host_free["a"] == (2_000, 48 * GI)
    state.ensure_layout()
    row = state.node_index["a"]
    assert (state.host_cpu[row], state.host_memory[row]) == (2_000, 48 * GI)
    hub.apply_pod(_plain("web-1", "a", "6", "16Gi", phase="Succeeded"))
    assert state.host_free["a"] == (8_000, 64 * GI)
    hub.apply_pod(_plain("web-2", "b", "100", "1Gi"))
    assert state.host_free["b"] == (0, 255 * GI)  # overcommitted CPU: nothing left, not negative
    hub.apply_pod(_plain("web-2", "b", "100", "1Gi"), deleted=True)
    assert state.host_free["b"] == (64_000, 256 * GI)
    hub.apply_node(_node("a", "8", "64Gi"), deleted=True)
    assert "a" not in state.host_free
    assert (state.host_cpu[row], state.host_memory[row]) == (HOST_UNKNOWN, HOST_UNKNOWN)


def test_a_tensor_fusion_pods_requests_reach_the_allocator_and_count_once_bound() -> None:
    hub, writer = _hub()
    hub.apply_node(_node("a", "8", "64Gi"))
    pod = _with_requests(tf_pod("p", tflops="100", vram="40Gi"), "3", "8Gi")
    writer.add(pod)
    allocation = hub.bind("team", "p", "uid-p", "a")
    assert allocation is not None and allocation.node == "a"
    demand = hub.allocator.balanced.profile.demand(100_000)
    assert demand is not None and demand.cpu_per_gpu == 3_000  # the pod's 3 CPU for one whole GPU
    assert hub.allocator.state.host_free["a"] == (8_000, 64 * GI)  # counted when the watch shows it
    hub.apply_pod(Pod.model_validate(writer.read_pod("team", "p")))
    assert hub.allocator.state.host_free["a"] == (5_000, 56 * GI)
