"""Unallocated GPUs at the end of a replay: free, and fragmented against the typical request mix.

Role: the figure the modes are compared on (docs/placement.md). For a node n and a task type m
(GPUs, share, CPU, memory, allowed models), the capacity m cannot use on n is: all of n's free
GPU capacity when m cannot run on n at all (CPU, memory or GPU model short, or fewer free GPUs
than it needs whole); otherwise the free capacity of the GPUs that cannot take m's share (for
whole-GPU types: every GPU not entirely free). The cluster's *fragmented* GPUs are the sum over
nodes of Σ_m weight(m) × that, weights being each type's share of the trace's GPU tasks. This is
computed from the simulator's own books, independently of the allocator's placement scores.
`unallocated_by_cause` splits the same sum by why m cannot use the capacity, the first that holds:
m's `gpu_spec` excludes the node's model; the node lacks the CPU or memory for m; m needs k > 1
whole GPUs and the node has fewer free; else the free milli on GPUs too small for m's share
(fractional leftovers, for whole-GPU types every GPU not entirely free).

Must not: place tasks, or depend on the allocator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpupool.simulation.openb import TraceNode, TraceTask

__all__ = ["CAUSES", "ClusterBooks", "TaskType", "fragmented_gpus", "task_mix", "unallocated_by_cause"]

CAUSES = ("model constraints", "CPU or memory", "multi-GPU", "fractional leftovers")

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class TaskType:
    num_gpu: int
    share_milli: int
    cpu_milli: int
    memory_mib: int
    gpu_spec: tuple[str, ...]


@dataclass(slots=True)
class ClusterBooks:
    """What the simulator knows is used: per node CPU and memory left, per GPU milli left."""

    nodes: Sequence[TraceNode]
    cpu_free: I64
    memory_free: I64
    gpu_free: I64  # (nodes, widest node's GPUs); -1 where a node has fewer GPUs

    @classmethod
    def empty(cls, nodes: Sequence[TraceNode]) -> ClusterBooks:
        widest = max(node.gpus for node in nodes)
        gpu_free = np.full((len(nodes), max(widest, 1)), -1, dtype=np.int64)
        for row, node in enumerate(nodes):
            gpu_free[row, : node.gpus] = 1000
        return cls(
            nodes,
            np.array([n.cpu_milli for n in nodes], dtype=np.int64),
            np.array([n.memory_mib for n in nodes], dtype=np.int64),
            gpu_free,
        )

    @property
    def free_gpus(self) -> float:
        return float(np.maximum(self.gpu_free, 0).sum()) / 1000


def task_mix(tasks: Sequence[TraceTask]) -> list[tuple[TaskType, float]]:
    """The trace's GPU task types and their weights (share of the GPU tasks)."""
    counts = Counter(
        TaskType(t.num_gpu, t.share_milli, t.cpu_milli, t.memory_mib, t.gpu_spec) for t in tasks if t.num_gpu
    )
    total = sum(counts.values())
    return [(kind, count / total) for kind, count in sorted(counts.items(), key=lambda i: repr(i[0]))]


def fragmented_gpus(books: ClusterBooks, mix: Sequence[tuple[TaskType, float]]) -> float:
    """Σ over nodes and task types of weight × free GPU capacity the type cannot use (GPUs)."""
    free = np.maximum(books.gpu_free, 0)
    node_free = free.sum(axis=1)
    whole = books.gpu_free == 1000
    whole_count = whole.sum(axis=1)
    models = np.array([n.model for n in books.nodes], dtype=object)
    total = 0.0
    for kind, weight in mix:
        runnable = (books.cpu_free >= kind.cpu_milli) & (books.memory_free >= kind.memory_mib)
        if kind.gpu_spec:
            runnable &= np.isin(models, kind.gpu_spec)
        if kind.num_gpu > 1 or kind.share_milli == 1000:
            runnable &= whole_count >= kind.num_gpu
            usable = np.where(whole, free, 0).sum(axis=1)
        else:
            usable = np.where(free >= kind.share_milli, free, 0).sum(axis=1)
        lost = np.where(runnable, node_free - usable, node_free)
        total += weight * float(lost.sum())
    return total / 1000


def unallocated_by_cause(books: ClusterBooks, mix: Sequence[tuple[TaskType, float]]) -> dict[str, float]:
    """`fragmented_gpus`, split by cause (CAUSES, in order); the parts sum to it (GPUs)."""
    free = np.maximum(books.gpu_free, 0)
    node_free = free.sum(axis=1)
    whole = books.gpu_free == 1000
    whole_count = whole.sum(axis=1)
    models = np.array([n.model for n in books.nodes], dtype=object)
    parts = dict.fromkeys(CAUSES, 0.0)
    for kind, weight in mix:
        model_ok = np.isin(models, kind.gpu_spec) if kind.gpu_spec else np.ones(node_free.size, dtype=bool)
        host_ok = (books.cpu_free >= kind.cpu_milli) & (books.memory_free >= kind.memory_mib)
        if kind.num_gpu > 1 or kind.share_milli == 1000:
            usable = np.where(whole, free, 0).sum(axis=1)
            enough = whole_count >= kind.num_gpu if kind.num_gpu > 1 else np.ones(node_free.size, dtype=bool)
        else:
            usable = np.where(free >= kind.share_milli, free, 0).sum(axis=1)
            enough = np.ones(node_free.size, dtype=bool)
        parts["model constraints"] += weight * float(node_free[~model_ok].sum())
        parts["CPU or memory"] += weight * float(node_free[model_ok & ~host_ok].sum())
        rest = model_ok & host_ok
        parts["multi-GPU"] += weight * float(node_free[rest & ~enough].sum())
        parts["fractional leftovers"] += weight * float((node_free - usable)[rest & enough].sum())
    return {cause: value / 1000 for cause, value in parts.items()}
