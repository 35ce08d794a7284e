"""A pod's CPU and memory requests and a node's allocatable, as kube-scheduler's NodeResourcesFit counts them.

Role: the allocator weighs a pod's CPU and memory against what its candidate nodes have left
(BalancedFit's stranded-GPU term, FragmentationAware's host check), so every `GpuRequest` carries
the pod's effective request (`pod_requests`): per resource, the larger of the sum over its
containers and the largest of its init containers (the pod's `spec.overhead` is not read — the
model does not carry it — so a RuntimeClass overhead is not counted). Every amount is capped just
below `HOST_UNKNOWN` (2⁶² milli-CPU or bytes), so an absurd quantity in a manifest stays a number
the allocator's arrays hold. What each node has left is the scheduler's running tally
(`gpupool.scheduler.host_room`), which reads a Node's allocatable with `node_allocatable`.

Must not: touch the allocator's state, or do I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from gpupool.core.allocator.state import HOST_UNKNOWN
from gpupool.core.model.foreign import Container, Node, Pod
from gpupool.core.quantity import Quantity

__all__ = ["node_allocatable", "pod_requests"]

CAP = HOST_UNKNOWN - 1  # the largest amount kept (milli-CPU or bytes)


def _amount(values: Mapping[str, Quantity], resource: str, scale: int) -> int:
    value = values.get(resource)
    return min(CAP, max(0, math.ceil(value.value * scale))) if value is not None else 0


def _sum(containers: Iterable[Container], resource: str, scale: int) -> int:
    return sum(_amount(c.resources.requests, resource, scale) for c in containers)


def pod_requests(pod: Pod) -> tuple[int, int]:
    """The pod's effective CPU (milli) and memory (bytes) requests."""
    spec = pod.spec
    cpu = max(
        _sum(spec.containers, "cpu", 1000),
        max((_amount(c.resources.requests, "cpu", 1000) for c in spec.init_containers), default=0),
    )
    memory = max(
        _sum(spec.containers, "memory", 1),
        max((_amount(c.resources.requests, "memory", 1) for c in spec.init_containers), default=0),
    )
    return min(CAP, cpu), min(CAP, memory)


def node_allocatable(node: Node) -> tuple[int, int] | None:
    """The Node's allocatable CPU (milli) and memory (bytes); None when it reports neither."""
    allocatable = node.status.allocatable
    if "cpu" not in allocatable and "memory" not in allocatable:
        return None
    return _amount(allocatable, "cpu", 1000), _amount(allocatable, "memory", 1)
