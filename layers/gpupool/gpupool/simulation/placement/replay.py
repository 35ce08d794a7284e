"""Replay a trace onto its nodes through the allocator, one placement rule at a time.

Protocol (docs/placement.md): tasks arrive in trace order, none leave; CPU-only tasks are placed
too. Under the protocol `rule` each rule places them its own way: the baselines as their
docstrings say (`baselines`), TensorFusion's modes as kube-scheduler would (they do not place pods
without GPUs: LeastAllocated, the most CPU and memory left, as a fraction of the node's),
FragmentationAware where the pod's CPU and memory add the least expected fragmentation (then
LeastAllocated), BalancedFit where they strand the fewest GPUs (then the least free GPUs, then the
least CPU left). Under `least-allocated` every rule leaves them to kube-scheduler's LeastAllocated,
as a real cluster does (gpupool's extender sees only GPU pods). The list repeats (pass 2 names
each task `NAME-2`, …) until the GPU requested reaches `inflation` × the cluster's GPUs, stopping
at the first task that reaches it. A task that fits nowhere is counted and skipped. A GPU task's
candidates are the nodes with CPU and memory left for it and a GPU model its `gpu_spec` allows
(kube-scheduler's own filters); the allocator's filter stages and the placement rule do the rest.
`seed` shuffles the order nodes are listed in, which is what exact score ties fall back to (and
seeds Random-fit).

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
from gpupool.core.allocator.state import AllocatorState
from gpupool.simulation.openb import TraceError, TraceNode, TraceTask, arrival_order
from gpupool.simulation.placement.baselines import BASELINES, Baseline, RandomFit, make_baseline
from gpupool.simulation.placement.gpu_specs import GpuSpec, spec_for
from gpupool.simulation.placement.host_only import host_only_rule, least_allocated
from gpupool.simulation.placement.measure import ClusterBooks, fragmented_gpus, task_mix, unallocated_by_cause

__all__ = ["PLACEMENTS", "PROTOCOLS", "Arrival", "Assignment", "ModeResult", "arrivals", "replay"]

PLACEMENTS = (*BASELINES, *(mode.value for mode in PlacementMode))
# Who places CPU-only tasks: the rule under test, or kube-scheduler's LeastAllocated for every rule.
PROTOCOLS = ("rule", "least-allocated")
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
    protocol: str
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
    unallocated_by_cause: tuple[tuple[str, float], ...] = ()  # `measure.CAUSES`, summing to unallocated


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


class _Cluster:
    """The allocator plus the simulator's own books, nodes listed in a seeded order."""

    def __init__(
        self,
        nodes: Sequence[TraceNode],
        tasks: Sequence[TraceTask],
        placement: str,
        seed: int,
        specs: dict[str, GpuSpec],
        protocol: str,
    ) -> None:
        if placement not in PLACEMENTS:
            raise TraceError(f"unknown placement {placement!r}; choose from {', '.join(PLACEMENTS)}")
        if protocol not in PROTOCOLS:
            raise TraceError(f"unknown protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
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
        self.host_only = host_only_rule(mode)  # a baseline places such tasks itself
        self.placement, self.protocol = placement, protocol
        self.baseline: Baseline | None = (
            make_baseline(placement, nodes, tasks, seed) if placement in BASELINES else None
        )
        self.rng = self.baseline.rng if isinstance(self.baseline, RandomFit) else random.Random(seed)
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
        self.book_row = np.empty(len(row_of), dtype=np.int64)  # allocator row → the trace's row
        self.book_row[self.allocator_row[self.allocator_row >= 0]] = np.flatnonzero(self.allocator_row >= 0)
        self.books = ClusterBooks.empty(nodes)
        self.cpu_total = np.maximum(self.books.cpu_free.astype(np.float64), 1.0)
        self.memory_total = np.maximum(self.books.memory_free.astype(np.float64), 1.0)
        self.models = np.array([node.model for node in nodes], dtype=object)

    def room_for(self, task: TraceTask) -> np.ndarray:
        fits = (self.books.cpu_free >= task.cpu_milli) & (self.books.memory_free >= task.memory_mib)
        if task.gpu_spec:
            fits &= np.isin(self.models, task.gpu_spec)
        return fits

    def _baseline_chooser(self, task: TraceTask) -> Chooser:
        """The baseline's choice, in the allocator's terms (its rows are the seeded order)."""
        baseline = self.baseline
        assert baseline is not None
        width = self.books.gpu_free.shape[1]

        def choose(
            state: AllocatorState, alive: np.ndarray, request: GpuRequest
        ) -> tuple[int, list[int]] | None:
            rows = np.flatnonzero(alive.any(axis=1))
            if not rows.size:
                return None
            book_row, indices = baseline.gpu_choice(
                self.books, self.book_row[rows], alive[rows, :width], task
            )
            row = int(self.allocator_row[book_row])
            return row, [row * alive.shape[1] + i for i in indices]

        return choose

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
        chooser = self._baseline_chooser(task) if self.baseline is not None else None
        try:
            allocation = self.allocator.reserve(request, among=among, chooser=chooser)
        except AllocationError:
            return None
        gpus = [self.gpu_of[g] for g in allocation.gpus]
        row = gpus[0][0]
        self._book(row, task)
        for _, index in gpus:
            self.books.gpu_free[row, index] -= task.share_milli
        return row, tuple(sorted((index, task.share_milli) for _, index in gpus))

    def _place_cpu_only(self, task: TraceTask, fits: np.ndarray) -> tuple[int, tuple[tuple[int, int], ...]]:
        """By the protocol and the rule (see the module docstring); ties go to the first node listed."""
        listed = self.by_position[fits[self.by_position]]  # the candidates, in the seeded order
        left = (self.books.cpu_free[listed] - task.cpu_milli) / self.cpu_total[listed]
        left = left + (self.books.memory_free[listed] - task.memory_mib) / self.memory_total[listed]
        if self.protocol == "least-allocated":
            row = least_allocated(self, listed, left, task)
        elif self.baseline is not None:
            row = self.baseline.cpu_only_choice(self.books, listed, task)
        else:
            row = self.host_only(self, listed, left, task)
        self._book(row, task)
        return row, ()

    def per_node(self, by_allocator_row: np.ndarray) -> np.ndarray:
        """A per-allocator-row value per trace row (0 for a node without GPUs, which it lacks)."""
        return np.where(self.allocator_row >= 0, by_allocator_row[np.maximum(self.allocator_row, 0)], 0.0)

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
    protocol: str = "rule",
) -> ModeResult:
    """Replay `tasks` onto `nodes` under one placement rule (a mode or a baseline) and protocol."""
    gpus_total = sum(node.gpus for node in nodes)
    sequence = arrivals(tasks, gpus_total, inflation)
    cluster = _Cluster(nodes, tasks, placement, seed, specs, protocol)
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
    mix = task_mix(tasks)
    return ModeResult(
        placement=placement,
        protocol=protocol,
        gpus_total=gpus_total,
        gpu_requested=sequence[-1].requested_milli / 1000,
        gpu_allocated=allocated / 1000,
        unallocated_gpus=fragmented_gpus(cluster.books, mix),
        free_gpus=cluster.books.free_gpus,
        tasks_placed=len(placed),
        tasks_failed=failed,
        decisions_per_second=len(sequence) / elapsed,
        curve=tuple(curve),
        assignments=tuple(placed),
        unallocated_by_cause=tuple(unallocated_by_cause(cluster.books, mix).items()),
    )
