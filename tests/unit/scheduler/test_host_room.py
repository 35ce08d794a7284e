"""What a node has left for pods: Node allocatable minus the requests of the pods bound to it.

Covers a pod's effective request (containers summed, the largest init container when larger,
absent requests as 0, absurd amounts capped), a Node's allocatable (None when it reports neither
CPU nor memory; negative as 0, absurd amounts capped), and the
ledger: a pod counted on its node once bound, moved, dropped when it finishes or is deleted, an
unchanged pod changing nothing, an overcommitted node left with 0, a node unknown until its
allocatable is seen and again once deleted; and `request_from_pod` carrying the pod's requests.
"""

from __future__ import annotations

from typing import Any

from gpupool.core.allocator.host_request import node_allocatable, pod_requests
from gpupool.core.allocator.pod_request import request_from_pod
from gpupool.core.allocator.state import HOST_UNKNOWN
from gpupool.core.model.foreign import Node, Pod
from gpupool.scheduler.host_room import HostRoom

GI = 1 << 30


def _pod(name: str, node: str | None, *containers: dict[str, str], init: tuple[dict[str, str], ...] = (),
         phase: str | None = "Running") -> Pod:  # fmt: skip
    def container(i: int, requests: dict[str, str]) -> dict[str, Any]:
        return {"name": f"c{i}", "resources": {"requests": requests}}

    spec: dict[str, Any] = {"containers": [container(i, r) for i, r in enumerate(containers)]}
    if init:
        spec["initContainers"] = [container(i, r) for i, r in enumerate(init)]
    if node:
        spec["nodeName"] = node
    return Pod.model_validate(
        {"metadata": {"name": name, "namespace": "team"}, "spec": spec, "status": {"phase": phase}}
    )


def _node(name: str, cpu: str | None = "16", memory: str | None = "64Gi") -> Node:
    allocatable = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return Node.model_validate({"metadata": {"name": name}, "status": {"allocatable": allocatable}})


def test_a_pods_effective_request() -> None:
    pod = _pod(
        "p", "n", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1.5"}, init=({"cpu": "3", "memory": "512Mi"},)
    )
    assert pod_requests(pod) == (3_000, GI)  # CPU: the init container's 3 > 0.5 + 1.5; memory: 1Gi > 512Mi
    assert pod_requests(_pod("q", "n", {})) == (0, 0)
    assert pod_requests(_pod("r", "n", {"cpu": "1m", "memory": "1k"})) == (1, 1_000)
    # Absurd amounts stay below the allocator's "unknown" marker (int64 arrays hold them).
    huge = _pod("h", "n", {"cpu": "1e30", "memory": "1e30"}, {"cpu": "1e30"})
    assert pod_requests(huge) == (HOST_UNKNOWN - 1, HOST_UNKNOWN - 1)


def test_a_nodes_allocatable() -> None:
    assert node_allocatable(_node("n", "15900m", "62Gi")) == (15_900, 62 * GI)
    assert node_allocatable(_node("n", None, "8Gi")) == (0, 8 * GI)
    assert node_allocatable(_node("n", None, None)) is None
    assert node_allocatable(_node("n", "1e30", "-1")) == (HOST_UNKNOWN - 1, 0)


def test_the_ledger_follows_binds_moves_and_finishes() -> None:
    room = HostRoom()
    assert room.room("a") is None  # unknown until its allocatable is seen
    pod = _pod("p", None, {"cpu": "4", "memory": "8Gi"})
    assert room.observe_pod("team/p", pod) == set()  # not bound yet: counts nowhere
    assert room.observe_node(_node("a")) == "a"
    assert room.observe_node(_node("a")) is None  # the same allocatable again
    assert room.room("a") == (16_000, 64 * GI)
    bound = _pod("p", "a", {"cpu": "4", "memory": "8Gi"})
    assert room.observe_pod("team/p", bound) == {"a"}
    assert room.room("a") == (12_000, 56 * GI)
    assert room.observe_pod("team/p", bound) == set()  # a resync of the same pod
    assert room.observe_pod("team/p", _pod("p", "b", {"cpu": "4", "memory": "8Gi"})) == {"a", "b"}
    assert room.room("a") == (16_000, 64 * GI) and room.room("b") is None
    room.observe_node(_node("b", "2", "4Gi"))
    assert room.room("b") == (0, 0)  # overcommitted: nothing left, never negative
    done = _pod("p", "b", {"cpu": "4", "memory": "8Gi"}, phase="Succeeded")
    assert room.observe_pod("team/p", done) == {"b"}
    assert room.room("b") == (2_000, 4 * GI)
    room.observe_pod("team/q", _pod("q", "a", {"cpu": "1"}))
    assert room.observe_pod("team/q", _pod("q", "a", {"cpu": "1"}), deleted=True) == {"a"}
    assert room.room("a") == (16_000, 64 * GI)
    assert room.observe_node(_node("a"), deleted=True) == "a"
    assert room.room("a") is None


def test_request_from_pod_carries_the_pods_cpu_and_memory() -> None:
    pod = _pod("p", None, {"cpu": "2", "memory": "3Gi"}, {"cpu": "250m"})
    notes = {"tensor-fusion.ai/tflops-request": "10", "tensor-fusion.ai/vram-request": "1Gi"}
    pod = pod.model_copy(update={"metadata": pod.metadata.model_copy(update={"annotations": notes})})
    request = request_from_pod(pod)
    assert (request.cpu_milli, request.memory) == (2_250, 3 * GI)
