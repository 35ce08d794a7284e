"""The limit: an upper bound on the GPUs any placement of the same arrivals could allocate.

Role: `benchmarks/placement.py` prints it beside the modes, so each mode's distance to what is
physically possible is known. Two linear programs, solved with HiGHS (`highspy`); both are
relaxations, so the bound is valid for every placement rule, online or not:

1. **What every placement must place.** Arrivals are grouped by kind (GPUs, share, CPU, memory,
   models) and nodes by group (model, GPUs, CPU, memory). An arrival fails only if, when it arrives,
   every node refuses it: too little CPU, too little memory, or too few GPUs with its share left
   (for whole GPUs: too few entirely free) — nodes its model or size excludes refuse it anyway.
   The LP asks whether the arrivals before it (each kind at most as many as arrived) can be spread
   over the groups so that every node is blocked, each group split into nodes blocked by CPU,
   by memory and by GPUs, each part holding its tasks within its CPU, memory and GPU capacity
   and using enough of the blocking resource: CPU above capacity − the task's CPU on every
   CPU-blocked node; for a share s, more than 1000 − s milli on every GPU (so at least one task
   per GPU) of a GPU-blocked node; for k whole GPUs, a task on at least GPUs − k + 1 of them.
   If that is infeasible, no placement can refuse it. Feasibility only grows as arrivals
   accumulate, so a binary search over the arrivals of each kind finds how many of them every
   placement places (the `checked` most frequent kinds; the others count 0, which stays valid).
2. **The packing.** Counts x(kind, group) ≥ 0 of placed tasks, between the forced count and the
   arrivals of each kind; per group its CPU, memory and GPU milli; and for each share θ ≤ 500 of the
   arrivals, the cut of the dual-feasible function f_θ (f = 1000 above 1000 − θ, the share
   between θ and 1000 − θ, 0 below θ; whole GPUs 1000 each) — on one GPU two shares above 1000 − θ
   never meet, nor one with what is left below θ. Maximise the GPUs placed.

Must not: be imported by the shipped package, or read the allocator or the simulator's rules.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Bound", "Kind", "forced_counts", "packing_bound", "placement_bound"]

MILLI = 1000

Kind = tuple[int, int, int, int, tuple[str, ...]]  # GPUs, share (milli per GPU; 0 CPU-only), CPU, MiB, models
Group = tuple[str, int, int, int]  # model, GPUs, CPU milli, memory MiB


@dataclass(frozen=True)
class Bound:
    gpus: float  # the upper bound on GPUs allocated
    forced_tasks: int  # arrivals every placement places
    forced_gpus: float  # their GPUs
    kinds_checked: int
    seconds: float


def kind_of(task: Any) -> Kind:
    return (
        task.num_gpu,
        task.share_milli if task.num_gpu else 0,
        task.cpu_milli,
        task.memory_mib,
        task.gpu_spec,
    )


def groups_of(nodes: Sequence[Any]) -> Counter[Group]:
    return Counter((n.model, n.gpus, n.cpu_milli, n.memory_mib) for n in nodes if n.gpus)


def _fits(kind: Kind, group: Group) -> bool:
    gpus, _, cpu, memory, models = kind
    model, node_gpus, node_cpu, node_memory = group
    return (not models or model in models) and cpu <= node_cpu and memory <= node_memory and gpus <= node_gpus


class _Lp:
    """Columns and rows gathered in Python, handed to HiGHS in bulk."""

    def __init__(self) -> None:
        self.columns = 0
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.starts: list[int] = [0]
        self.index: list[int] = []
        self.value: list[float] = []

    def column(self) -> int:
        self.columns += 1
        return self.columns - 1

    def row(self, terms: Sequence[tuple[int, float]], lower: float, upper: float) -> None:
        kept = [(c, v) for c, v in terms if v]
        self.lower.append(lower)
        self.upper.append(upper)
        self.index.extend(c for c, _ in kept)
        self.value.extend(v for _, v in kept)
        self.starts.append(len(self.index))

    def solve(self, cost: Sequence[float] | None = None) -> tuple[bool, float]:
        import highspy

        h: Any = highspy.Highs()  # type: ignore[no-untyped-call]
        h.silent()
        h.setOptionValue("threads", 1)
        n = self.columns
        costs = np.zeros(n) if cost is None else -np.asarray(cost, dtype=float)  # HiGHS minimises
        h.addCols(n, costs, np.zeros(n), np.full(n, highspy.kHighsInf), 0, [], [], [])
        rows = len(self.lower)
        h.addRows(
            rows,
            np.array(self.lower),
            np.array(self.upper),
            len(self.index),
            np.array(self.starts[:-1], dtype=np.int32),
            np.array(self.index, dtype=np.int32),
            np.array(self.value, dtype=float),
        )
        h.run()
        if h.getModelStatus() == highspy.HighsModelStatus.kNotset:  # HiGHS ran earlier with other threads
            h.setOptionValue("threads", 0)
            h.run()
        optimal = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        return optimal, (-float(h.getInfo().objective_function_value) if optimal else 0.0)


def can_block(groups: Counter[Group], kind: Kind, before: Counter[Kind]) -> bool:
    """Whether the arrivals `before` could leave every node unable to take one task of `kind`."""
    gpus, share, cpu, memory, _ = kind
    open_groups = [g for g in groups if _fits(kind, g)]
    if not open_groups:
        return True
    inf = float("inf")
    lp = _Lp()
    placed: dict[Kind, list[tuple[int, float]]] = {k: [] for k in before if before[k] > 0}
    ways = ("cpu", "memory", "gpu") if gpus else ("cpu", "memory")
    for group in open_groups:
        _, node_gpus, node_cpu, node_memory = group
        nodes = [lp.column() for _ in ways]
        lp.row([(c, 1.0) for c in nodes], groups[group], groups[group])
        for way, count in zip(ways, nodes, strict=True):
            tasks = [(k, lp.column()) for k in placed if _fits(k, group)]
            for k, column in tasks:
                placed[k].append((column, 1.0))
            cpu_used = [(c, float(k[2])) for k, c in tasks]
            memory_used = [(c, float(k[3])) for k, c in tasks]
            milli_used = [(c, float(k[0] * k[1])) for k, c in tasks]
            lp.row([*cpu_used, (count, -float(node_cpu))], -inf, 0.0)
            lp.row([*memory_used, (count, -float(node_memory))], -inf, 0.0)
            lp.row([*milli_used, (count, -float(node_gpus * MILLI))], -inf, 0.0)
            if way == "cpu":
                lp.row([*cpu_used, (count, -float(node_cpu - cpu + 1))], 0.0, inf)
            elif way == "memory":
                lp.row([*memory_used, (count, -float(node_memory - memory + 1))], 0.0, inf)
            elif share < MILLI:
                lp.row([*milli_used, (count, -float(node_gpus * (MILLI + 1 - share)))], 0.0, inf)
                lp.row([*((c, float(k[0])) for k, c in tasks), (count, -float(node_gpus))], 0.0, inf)
            else:
                lp.row(
                    [*((c, float(k[0])) for k, c in tasks), (count, -float(node_gpus - gpus + 1))], 0.0, inf
                )
    for k, columns in placed.items():
        if columns:
            lp.row(columns, -inf, float(before[k]))
    feasible, _ = lp.solve()
    return feasible


def forced_counts(nodes: Sequence[Any], arrivals: Sequence[Any], *, checked: int = 40) -> dict[Kind, int]:
    """Per kind, how many of its first arrivals every placement places (see the module docstring)."""
    groups = groups_of(nodes)
    kinds = [kind_of(a.task) for a in arrivals]
    positions: dict[Kind, list[int]] = {}
    for index, kind in enumerate(kinds):
        positions.setdefault(kind, []).append(index)
    ranked = sorted(positions, key=lambda k: (-len(positions[k]), repr(k)))[:checked]
    forced: dict[Kind, int] = {}
    for kind in ranked:
        at = positions[kind]
        low, high = 0, len(at)  # the first of its arrivals some placement could refuse
        while low < high:
            middle = (low + high) // 2
            if can_block(groups, kind, Counter(kinds[: at[middle]])):
                high = middle
            else:
                low = middle + 1
        forced[kind] = low
    return forced


def packing_bound(nodes: Sequence[Any], arrivals: Sequence[Any], forced: dict[Kind, int]) -> float:
    """The most GPUs a packing of the arrivals can hold with the forced ones placed (LP, in GPUs)."""
    groups = groups_of(nodes)
    counts = Counter(kind_of(a.task) for a in arrivals)
    lp = _Lp()
    cost: list[float] = []
    columns: dict[tuple[Kind, Group], int] = {}
    for kind in counts:
        for group in groups:
            if _fits(kind, group):
                columns[kind, group] = lp.column()
                cost.append(kind[0] * kind[1] / MILLI)
    inf = float("inf")
    for kind, arrived in counts.items():
        terms = [(c, 1.0) for (k, _), c in columns.items() if k == kind]
        if terms:
            lp.row(terms, float(forced.get(kind, 0)), float(arrived))
        elif forced.get(kind, 0):
            raise ValueError(f"kind {kind} is forced but fits no node")
    thetas = sorted({k[1] for k in counts if k[0] == 1 and 0 < k[1] <= MILLI // 2})
    for group, count in groups.items():
        _, node_gpus, node_cpu, node_memory = group
        here = [(k, c) for (k, g), c in columns.items() if g == group]
        lp.row([(c, float(k[2])) for k, c in here], -inf, float(count * node_cpu))
        lp.row([(c, float(k[3])) for k, c in here], -inf, float(count * node_memory))
        for theta in (0, *thetas):
            lp.row([(c, float(_dff(k, theta))) for k, c in here], -inf, float(count * node_gpus * MILLI))
    optimal, value = lp.solve(cost)
    if not optimal:
        raise RuntimeError("the packing LP was not solved to optimality")
    return value


def _dff(kind: Kind, theta: int) -> int:
    gpus, share = kind[0], kind[1]
    if not gpus:
        return 0
    if share >= MILLI:
        return MILLI * gpus
    if theta and share > MILLI - theta:
        return MILLI
    if theta and share < theta:
        return 0
    return share


def placement_bound(nodes: Sequence[Any], arrivals: Sequence[Any], *, checked: int = 40) -> Bound:
    """Both LPs: the bound, and how much every placement is forced to place."""
    started = time.perf_counter()
    forced = forced_counts(nodes, arrivals, checked=checked)
    value = packing_bound(nodes, arrivals, forced)
    return Bound(
        gpus=value,
        forced_tasks=sum(forced.values()),
        forced_gpus=sum(count * k[0] * k[1] for k, count in forced.items()) / MILLI,
        kinds_checked=len(forced),
        seconds=time.perf_counter() - started,
    )
