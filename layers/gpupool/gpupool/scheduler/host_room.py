"""What CPU and memory each node has left for pods: allocatable minus what its pods request.

Role: BalancedFit's stranded-GPU term and FragmentationAware's host check weigh a pod's CPU and
memory against what its candidate nodes have left (`AllocatorState.set_host_free`). This module
keeps that figure from the objects the relay watches, the way kube-scheduler's NodeResourcesFit
counts it: a Node's `status.allocatable` cpu and memory, minus the requests of the pods bound to
it (`spec.nodeName`) that have not finished (phase Succeeded or Failed), both read as the shared
fit reads them (`gpupool.core.allocator.host_request`). What is left never goes below zero (an
overcommitted node has nothing left); a node whose allocatable the relay has not seen yet is
unknown, never short. Only the relay keeps this tally: the functions' consolidation reads the
pods' requests alone, so this module is the scheduler's.

Must not: touch the allocator's state (the caller applies `changed` nodes), or do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupool.core.allocator.host_request import node_allocatable, pod_requests
from gpupool.core.model.foreign import Node, Pod

__all__ = ["HostRoom"]

FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class _Held:
    node: str
    cpu: int
    memory: int


class HostRoom:
    """Per node, allocatable minus the requests of the pods bound to it."""

    def __init__(self) -> None:
        self._allocatable: dict[str, tuple[int, int]] = {}
        self._held: dict[str, _Held] = {}  # pod key → what it requests on its node
        self._used: dict[str, tuple[int, int]] = {}  # node → its pods' requests, summed

    def observe_node(self, node: Node, *, deleted: bool = False) -> str | None:
        """Record a Node's allocatable; the node's name when what it has left may have changed."""
        name = node.metadata.name or ""
        allocatable = None if deleted else node_allocatable(node)
        before = self._allocatable.get(name)
        if allocatable is None:
            self._allocatable.pop(name, None)
        else:
            self._allocatable[name] = allocatable
        return name if allocatable != before else None

    def observe_pod(self, key: str, pod: Pod, *, deleted: bool = False) -> set[str]:
        """Record a pod's requests on its node; the nodes whose room changed."""
        node = pod.spec.node_name
        counted = not deleted and bool(node) and pod.status.phase not in FINISHED
        held = _Held(node or "", *pod_requests(pod)) if counted else None
        previous = self._held.get(key)
        if held == previous:
            return set()
        changed: set[str] = set()
        if previous is not None:
            del self._held[key]
            self._add(previous, -1)
            changed.add(previous.node)
        if held is not None:
            self._held[key] = held
            self._add(held, 1)
            changed.add(held.node)
        return changed

    def _add(self, held: _Held, sign: int) -> None:
        cpu, memory = self._used.get(held.node, (0, 0))
        cpu, memory = cpu + sign * held.cpu, memory + sign * held.memory
        if cpu or memory:
            self._used[held.node] = (cpu, memory)
        else:
            self._used.pop(held.node, None)

    def room(self, node: str) -> tuple[int, int] | None:
        """CPU (milli) and memory (bytes) left on `node`, or None when its allocatable is unknown."""
        allocatable = self._allocatable.get(node)
        if allocatable is None:
            return None
        cpu, memory = self._used.get(node, (0, 0))
        return max(0, allocatable[0] - cpu), max(0, allocatable[1] - memory)
