"""Replay a trace onto its nodes through the allocator, one placement rule at a time.

Protocol (docs/placement.md): tasks arrive in trace order, none leave; CPU-only tasks are placed
too, each rule its own way: Random-fit at random, Best-fit on the node with the least CPU and
memory left, TensorFusion's modes as kube-scheduler would (they do not place pods without GPUs:
LeastAllocated, the most CPU and memory left), FragmentationAware where the pod's CPU and memory
add the least expected fragmentation (then LeastAllocated). The list
repeats (pass 2 names each task `NAME-2`, …) until the GPU requested reaches `inflation` × the
cluster's GPUs, stopping at the first task that reaches it. A task that fits nowhere is counted
and skipped. A GPU task's candidates are the nodes with CPU and memory left for it and a GPU
model its `gpu_spec` allows (kube-scheduler's own filters); the allocator's filter stages and the
placement rule do the rest. `seed` shuffles the order nodes are listed in, which is what exact
score ties fall back to (and seeds Random-fit).

Must not: read files or the clock (`clock` is passed in), or print.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpupool.core.allocator import (
    AllocationError,
    Allocator,
    GpuInfo,
    GpuRequest,
    PlacementMode,
    PlacementPolicy,
)
from gpupool.core.allocator.allocator import Chooser
from gpupool.core.allocator.mix import RequestShape
from gpupool.simulation.openb import TraceError, TraceNode, TraceTask, arrival_order
from gpupool.simulation.placement.baselines import BASELINES, BestFit, RandomFit
from gpupool.simulation.placement.gpu_specs import GpuSpec, spec_for
from gpupool.simulation.placement.measure import ClusterBooks, fragmented_gpus, task_mix

__all__ = ["PLACEMENTS", "Arrival", "Assignment", "ModeResult", "arrivals", "replay"]

PLACEMENTS = (*BASELINES, *(mode.value for mode in PlacementMode))
POOL = "trace"
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Arrival:
    name: str
    task: TraceTask
    requested_milli: int  # GPU requested so far, this task included


@dataclass(frozen=True, slots=True)
class Assignment:
    pod: str
    node: str
    gpus: tuple[tuple[int, int], ...]  # (GPU index on the node, milli)


@dataclass(frozen=True, slots=True)
class ModeResult:
    placement: str
    gpus_total: int
    gpu_requested: float
    gpu_allocated: float
    unallocated_gpus: float  # fragmented: free capacity the typical mix can no longer use
    free_gpus: float
    tasks_placed: int
    tasks_failed: int
    decisions_per_second: float
    curve: tuple[tuple[float, float], ...]  # (GPU requested so far, GPU allocated so far)
    assignments: tuple[Assignment, ...]


def arrivals(tasks: Sequence[TraceTask], gpus_total: int, inflation: float) -> list[Arrival]:
    """The replayed sequence: trace order, repeated until GPU requested ≥ inflation × GPUs."""
    if inflation <= 0:
        raise TraceError(f"inflation must be positive, got {inflation}")
    ordered = arrival_order(tasks)
    if not any(task.num_gpu for task in ordered):
        raise TraceError("the pod list has no GPU task: GPU requested can never reach the target")
    target = inflation * gpus_total * 1000
    sequence: list[Arrival] = []
    requested, rank = 0, 1
    while True:
        for task in ordered:
            requested += task.gpu_demand_milli
            sequence.append(Arrival(task.name if rank == 1 else f"{task.name}-{rank}", task, requested))
            if requested >= target:
                return sequence
        rank += 1


def _chooser(placement: str, seed: int) -> Chooser | None:
    if placement == "RandomFit":
        return RandomFit(seed)
    if placement == "BestFit":
        return BestFit()
    return None


class _Cluster:
    """The allocator plus the simulator's own books, nodes listed in a seeded order."""

    def __init__(
        self, nodes: Sequence[TraceNode], placement: str, seed: int, specs: dict[str, GpuSpec]
    ) -> None:
        if placement not in PLACEMENTS:
            raise TraceError(f"unknown placement {placement!r}; choose from {', '.join(PLACEMENTS)}")
        order = list(range(len(nodes)))
        random.Random(seed).shuffle(order)
        self.position = np.empty(len(nodes), dtype=np.int64)
        self.position[order] = np.arange(len(nodes))
        self.by_position = np.array(order, dtype=np.int64)
        self.names = [f"n{int(p):05d}" for p in self.position]
        self.gpu_of: dict[str, tuple[int, int]] = {}
        mode = (
            PlacementMode(placement)
            if placement not in BASELINES
            else PlacementMode.NODE_COMPACT_GPU_LOW_LOAD
        )
        self.allocator = Allocator(PlacementPolicy(mode=mode))
        self.chooser = _chooser(placement, seed)
        self.placement = placement
        self.rng = self.chooser.rng if isinstance(self.chooser, RandomFit) else random.Random(seed)
        for row, node in enumerate(nodes):
            spec = spec_for(node.model, specs)
            for index in range(node.gpus):
                name = f"{self.names[row]}-gpu-{index}"
                self.gpu_of[name] = (row, index)
                info = GpuInfo(
                    name,
                    self.names[row],
                    POOL,
                    spec.tflops_milli,
                    spec.vram_bytes,
                    model=node.model,
                    index=index,
                )
                self.allocator.state.upsert_gpu(info)
        for row, node in enumerate(nodes):
            self.allocator.state.set_host_free(self.names[row], node.cpu_milli, node.memory_mib * MIB)
        self.allocator.state.ensure_layout()
        row_of = self.allocator.state.node_index
        self.allocator_row = np.array([row_of.get(name, -1) for name in self.names], dtype=np.int64)
        self.books = ClusterBooks.empty(nodes)
        self.cpu_total = np.maximum(self.books.cpu_free.astype(np.float64), 1.0)
        self.memory_total = np.maximum(self.books.memory_free.astype(np.float64), 1.0)
        self.models = np.array([node.model for node in nodes], dtype=object)

    def room_for(self, task: TraceTask) -> np.ndarray:
        fits = (self.books.cpu_free >= task.cpu_milli) & (self.books.memory_free >= task.memory_mib)
        if task.gpu_spec:
            fits &= np.isin(self.models, task.gpu_spec)
        return fits

    def place(self, name: str, task: TraceTask) -> tuple[int, tuple[tuple[int, int], ...]] | None:
        """The node row and (GPU index, milli) pairs the task got, or None when it fits nowhere."""
        fits = self.room_for(task)
        if not fits.any():
            return None
        if not task.num_gpu:
            return self._place_cpu_only(task, fits)
        request = GpuRequest(
            namespace="trace",
            name=name,
            pool=POOL,
            gpu_count=task.num_gpu,
            gpu_share_milli=task.share_milli,
            gpu_model=task.gpu_spec[0] if len(task.gpu_spec) == 1 else None,
            cpu_milli=task.cpu_milli,
            memory=task.memory_mib * MIB,
        )
        among = None if fits.all() else [self.names[row] for row in np.flatnonzero(fits).tolist()]
        try:
            allocation = self.allocator.reserve(request, among=among, chooser=self.chooser)
        except AllocationError:
            return None
        gpus = [self.gpu_of[g] for g in allocation.gpus]
        row = gpus[0][0]
        self._book(row, task)
        for _, index in gpus:
            self.books.gpu_free[row, index] -= task.share_milli
        return row, tuple(sorted((index, task.share_milli) for _, index in gpus))

    def _place_cpu_only(self, task: TraceTask, fits: np.ndarray) -> tuple[int, tuple[tuple[int, int], ...]]:
        """Each rule's own way (see the module docstring); ties go to the first node listed."""
        left = (self.books.cpu_free - task.cpu_milli) / self.cpu_total
        left = left + (self.books.memory_free - task.memory_mib) / self.memory_total
        if self.placement == "RandomFit":
            rows = np.flatnonzero(fits[self.by_position])
            row = int(self.by_position[rows[self.rng.randrange(rows.size)]])
        elif self.placement == "BestFit":
            row = int(self.by_position[int(np.argmin(np.where(fits, left, np.inf)[self.by_position]))])
        elif self.placement == PlacementMode.FRAGMENTATION_AWARE.value:
            request = RequestShape(gpu_count=0, cpu_milli=task.cpu_milli, memory=task.memory_mib * MIB)
            by_row = self.allocator.fragmentation.node_deltas_without_gpu(self.allocator.state, request)
            delta = np.where(self.allocator_row >= 0, by_row[np.maximum(self.allocator_row, 0)], 0.0)
            order = np.lexsort((-left[self.by_position], np.where(fits, delta, np.inf)[self.by_position]))
            row = int(self.by_position[int(order[0])])
        else:  # TensorFusion's modes leave pods without GPUs to kube-scheduler: LeastAllocated
            row = int(self.by_position[int(np.argmax(np.where(fits, left, -np.inf)[self.by_position]))])
        self._book(row, task)
        return row, ()

    def _book(self, row: int, task: TraceTask) -> None:
        self.books.cpu_free[row] -= task.cpu_milli
        self.books.memory_free[row] -= task.memory_mib
        cpu, memory = int(self.books.cpu_free[row]), int(self.books.memory_free[row])
        self.allocator.state.set_host_free(self.names[row], cpu, memory * MIB)


def replay(
    nodes: Sequence[TraceNode],
    tasks: Sequence[TraceTask],
    placement: str,
    *,
    inflation: float,
    seed: int,
    specs: dict[str, GpuSpec],
    clock: Callable[[], float],
    progress: Callable[[int, int], None] | None = None,
) -> ModeResult:
    """Replay `tasks` onto `nodes` under one placement rule (a mode or a baseline)."""
    gpus_total = sum(node.gpus for node in nodes)
    sequence = arrivals(tasks, gpus_total, inflation)
    cluster = _Cluster(nodes, placement, seed, specs)
    placed: list[Assignment] = []
    allocated, failed = 0, 0
    curve: list[tuple[float, float]] = [(0.0, 0.0)]
    every = max(1, len(sequence) // 400)
    started = clock()
    for done, arrival in enumerate(sequence, start=1):
        outcome = cluster.place(arrival.name, arrival.task)
        if outcome is None:
            failed += 1
        else:
            allocated += arrival.task.gpu_demand_milli
            placed.append(Assignment(arrival.name, nodes[outcome[0]].sn, outcome[1]))
        if done % every == 0 or done == len(sequence):
            curve.append((arrival.requested_milli / 1000, allocated / 1000))
            if progress is not None:
                progress(done, len(sequence))
    elapsed = max(clock() - started, 1e-9)
    return ModeResult(
        placement=placement,
        gpus_total=gpus_total,
        gpu_requested=sequence[-1].requested_milli / 1000,
        gpu_allocated=allocated / 1000,
        unallocated_gpus=fragmented_gpus(cluster.books, task_mix(tasks)),
        free_gpus=cluster.books.free_gpus,
        tasks_placed=len(placed),
        tasks_failed=failed,
        decisions_per_second=len(sequence) / elapsed,
        curve=tuple(curve),
        assignments=tuple(placed),
    )
