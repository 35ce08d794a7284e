"""Baseline placement rules for the simulator, as strong as their names allow: Random-fit, Best-fit,
Dot-product (Tetris) and FGD (Weng et al., ATC '23), side by side with the allocator's modes.

Role: each rule picks, for a GPU task, a node and GPUs among those the allocator's filter stages
left (the simulator hands it the candidates), and for a CPU-only task a node among those with the
CPU and memory for it. They read the simulator's own books (CPU and memory left per node, milli
left per GPU: `measure.ClusterBooks`) in the trace's units and share no scoring code with the
allocator's modes. Every tie goes to the first candidate in the order the simulator lists them
(the nodes' seeded order), then the lowest GPU index. Model constraints (`gpu_spec`) are the
filters' business: a rule only ever sees nodes whose model the task allows.

- RandomFit: a node drawn uniformly among the candidates, then GPUs drawn there (CPU-only: a node
  drawn uniformly).
- BestFit: every task, CPU-only included, to the node that would keep the least free GPU capacity
  (milli, summed over its GPUs), ties to the least CPU left; a fractional task to that node's
  tightest GPU (least milli left that fits), whole GPUs to its lowest-index free GPUs.
- DotProduct (Tetris, Grandl et al., SIGCOMM '14): the node whose free resources align best with
  the demand — the largest dot product of (CPU, memory, GPU) free and (CPU, memory, GPU) asked, each
  over the largest node's capacity in that dimension. As in the FGD authors' simulator, a node
  offers one group per GPU it could share (a fractional task against that GPU's milli left) and one
  group of its fully free GPUs (their milli together); the task takes the best group. CPU-only
  tasks have no GPU term.
- FGD (the paper's Fragmentation Gradient Descent): the node (and, for a fractional task, the GPU)
  whose fragmentation, measured against the trace's typical tasks, grows the least. Typical tasks:
  the trace's task types (CPU, GPU milli, GPU count, models; CPU-only tasks included) by
  popularity until they cover 95 % of the tasks, weights their shares among those (the authors'
  artifact defaults). A node's fragmentation for a typical task m is all its free GPU milli when m
  cannot run there (a CPU-only m, a model m excludes, too little CPU, fewer GPUs with m's milli
  left than m needs), else the milli of its GPUs with less left than m asks; the node's
  fragmentation is the weighted sum. Multi-GPU tasks take the lowest-index free GPUs; CPU-only
  tasks are placed by the same Δ (their CPU can only raise it). The paper's model has CPU and GPU
  only: memory is checked by the filters, not measured. The exact Δ is compared (the artifact
  scores an integer sigmoid of it, which ties more often).

Must not: filter, change the books (the simulator does), or be offered as a pool's placement mode.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gpupool.simulation.openb import TraceNode, TraceTask
from gpupool.simulation.placement.measure import ClusterBooks

__all__ = ["BASELINES", "Baseline", "BestFit", "DotProduct", "Fgd", "RandomFit", "make_baseline"]

B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
MILLI = 1000


class Baseline(Protocol):
    """A placement rule over the simulator's books; `rows` are candidate book rows in tie order."""

    def gpu_choice(self, books: ClusterBooks, rows: I64, alive: B, task: TraceTask) -> tuple[int, list[int]]:
        """The chosen book row and GPU indices; `alive[i, j]`: GPU j of `rows[i]` passed the filters."""
        ...

    def cpu_only_choice(self, books: ClusterBooks, rows: I64, task: TraceTask) -> int:
        """The chosen book row for a task without GPUs."""
        ...


def _first_min(*keys: npt.NDArray[np.float64] | I64) -> int:
    """Index of the lexicographically smallest (keys[0], keys[1], …, position)."""
    order = np.lexsort((np.arange(keys[0].size), *reversed(keys)))
    return int(order[0])


def _lowest_free(books: ClusterBooks, row: int, count: int) -> list[int]:
    return [int(i) for i in np.flatnonzero(books.gpu_free[row] == MILLI)[:count]]


class RandomFit:
    """Uniformly random among the candidate nodes, then among the GPUs that passed; seeded."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def gpu_choice(self, books: ClusterBooks, rows: I64, alive: B, task: TraceTask) -> tuple[int, list[int]]:
        pick = self.rng.randrange(rows.size)
        columns = np.flatnonzero(alive[pick]).tolist()
        return int(rows[pick]), sorted(self.rng.sample(columns, task.num_gpu))

    def cpu_only_choice(self, books: ClusterBooks, rows: I64, task: TraceTask) -> int:
        return int(rows[self.rng.randrange(rows.size)])


class BestFit:
    """The node that would keep the least free GPU capacity, ties to the least CPU left."""

    @staticmethod
    def _node(books: ClusterBooks, rows: I64, task: TraceTask) -> int:
        free = np.maximum(books.gpu_free[rows], 0).sum(axis=1) - task.gpu_demand_milli
        return _first_min(free, books.cpu_free[rows] - task.cpu_milli)

    def gpu_choice(self, books: ClusterBooks, rows: I64, alive: B, task: TraceTask) -> tuple[int, list[int]]:
        pick = self._node(books, rows, task)
        row = int(rows[pick])
        if task.share_milli < MILLI:
            left = np.where(alive[pick], books.gpu_free[row], np.iinfo(np.int64).max)
            return row, [int(np.argmin(left))]
        return row, [int(i) for i in np.flatnonzero(alive[pick])[: task.num_gpu]]

    def cpu_only_choice(self, books: ClusterBooks, rows: I64, task: TraceTask) -> int:
        return int(rows[self._node(books, rows, task)])


class DotProduct:
    """Tetris' alignment: the largest dot product of free resources and demand (see the module)."""

    def __init__(self, nodes: Sequence[TraceNode]) -> None:
        self.cpu_scale = float(max(n.cpu_milli for n in nodes)) or 1.0
        self.memory_scale = float(max(n.memory_mib for n in nodes)) or 1.0
        self.gpu_scale = float(max(n.gpus for n in nodes) * MILLI) or 1.0

    def _host_term(self, books: ClusterBooks, rows: I64, task: TraceTask) -> F64:
        cpu = books.cpu_free[rows] / self.cpu_scale * (task.cpu_milli / self.cpu_scale)
        memory = books.memory_free[rows] / self.memory_scale * (task.memory_mib / self.memory_scale)
        return np.asarray(cpu + memory, dtype=np.float64)

    def gpu_choice(self, books: ClusterBooks, rows: I64, alive: B, task: TraceTask) -> tuple[int, list[int]]:
        host = self._host_term(books, rows, task)
        asked = task.gpu_demand_milli / self.gpu_scale
        gpus = books.gpu_free[rows]
        whole = (gpus == MILLI) & alive
        idle = whole.sum(axis=1)
        # The group of fully free GPUs, when they hold the task (whole GPUs: every candidate).
        exclusive = np.where(
            idle * MILLI >= task.gpu_demand_milli, host + idle * MILLI / self.gpu_scale * asked, -np.inf
        )
        best = exclusive
        shared_column = np.full(rows.size, -1)
        if task.share_milli < MILLI:  # one group per partly used GPU that still fits the task
            shared = alive & (gpus < MILLI)
            scores = np.where(shared, host[:, None] + gpus / self.gpu_scale * asked, -np.inf)
            column = np.argmax(scores, axis=1)
            value = scores[np.arange(rows.size), column]
            better = value > best
            best = np.where(better, value, best)
            shared_column = np.where(better, column, -1)
        pick = _first_min(-best)
        row = int(rows[pick])
        if shared_column[pick] >= 0:
            return row, [int(shared_column[pick])]
        return row, [int(i) for i in np.flatnonzero(whole[pick])[: task.num_gpu]]

    def cpu_only_choice(self, books: ClusterBooks, rows: I64, task: TraceTask) -> int:
        return int(rows[_first_min(-self._host_term(books, rows, task))])


class Fgd:
    """Fragmentation Gradient Descent against the trace's typical tasks (see the module)."""

    POPULARITY = 0.95

    def __init__(self, nodes: Sequence[TraceNode], tasks: Sequence[TraceTask]) -> None:
        kinds = Counter(
            (t.cpu_milli, t.share_milli if t.num_gpu else 0, t.num_gpu, t.gpu_spec) for t in tasks
        )
        ranked = sorted(kinds.items(), key=lambda item: (-item[1], item[0]))
        kept: list[tuple[tuple[int, int, int, tuple[str, ...]], int]] = []
        covered = 0
        for kind, count in ranked:
            if covered >= self.POPULARITY * len(tasks):
                break
            kept.append((kind, count))
            covered += count
        self.typical = [(kind, count / covered) for kind, count in kept]
        self.models = np.array([n.model for n in nodes], dtype=object)

    def fragmentation(self, cpu: I64, gpus: I64, models: npt.NDArray[np.object_]) -> F64:
        """Each row's fragmentation (milli): cpu (n,), gpus (n, width) milli left (−1: no GPU)."""
        free = np.maximum(gpus, 0)
        total = free.sum(axis=1).astype(np.float64)
        out = np.zeros(cpu.shape[0])
        for (task_cpu, milli, count, spec), weight in self.typical:
            if count == 0:
                out += weight * total
                continue
            runs = (cpu >= task_cpu) & ((gpus >= milli).sum(axis=1) >= count)
            if spec:
                runs &= np.isin(models, spec)
            short = np.where(gpus < milli, free, 0).sum(axis=1)
            out += weight * np.where(runs, short, total)
        return out

    def gpu_choice(self, books: ClusterBooks, rows: I64, alive: B, task: TraceTask) -> tuple[int, list[int]]:
        cpu, gpus, models = books.cpu_free[rows], books.gpu_free[rows], self.models[rows]
        before = self.fragmentation(cpu, gpus, models)
        if task.share_milli < MILLI:
            # One candidate per distinct milli left on a node (equal GPUs give equal Δ; the first wins).
            width = gpus.shape[1]
            first = alive.copy()
            for later in range(1, width):
                for earlier in range(later):
                    first[:, later] &= ~(alive[:, earlier] & (gpus[:, earlier] == gpus[:, later]))
            at, columns = np.nonzero(first)
            after_gpus = gpus[at].copy()
            after_gpus[np.arange(at.size), columns] -= task.share_milli
            after = self.fragmentation(cpu[at] - task.cpu_milli, after_gpus, models[at])
            pick = _first_min(np.round(after - before[at], 6), at, columns)
            return int(rows[at[pick]]), [int(columns[pick])]
        after_gpus = gpus.copy()
        chosen = []
        for i in range(rows.size):
            columns = np.flatnonzero(alive[i])[: task.num_gpu]
            after_gpus[i, columns] = 0
            chosen.append(columns)
        after = self.fragmentation(cpu - task.cpu_milli, after_gpus, models)
        pick = _first_min(np.round(after - before, 6))
        return int(rows[pick]), [int(c) for c in chosen[pick]]

    def cpu_only_choice(self, books: ClusterBooks, rows: I64, task: TraceTask) -> int:
        cpu, gpus, models = books.cpu_free[rows], books.gpu_free[rows], self.models[rows]
        delta = self.fragmentation(cpu - task.cpu_milli, gpus, models) - self.fragmentation(cpu, gpus, models)
        return int(rows[_first_min(np.round(delta, 6))])


# Each baseline by its name, set up for a trace's nodes, tasks and seed (a new baseline: its class
# and one line here).
BASELINES: dict[str, Callable[[Sequence[TraceNode], Sequence[TraceTask], int], Baseline]] = {
    "RandomFit": lambda nodes, tasks, seed: RandomFit(seed),
    "BestFit": lambda nodes, tasks, seed: BestFit(),
    "DotProduct": lambda nodes, tasks, seed: DotProduct(nodes),
    "FGD": lambda nodes, tasks, seed: Fgd(nodes, tasks),
}


def make_baseline(name: str, nodes: Sequence[TraceNode], tasks: Sequence[TraceTask], seed: int) -> Baseline:
    """The baseline called `name` (one of BASELINES), set up for this trace."""
    build = BASELINES.get(name)
    if build is None:
        raise ValueError(f"unknown baseline {name!r}")
    return build(nodes, tasks, seed)
