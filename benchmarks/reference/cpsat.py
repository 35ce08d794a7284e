"""Reference solver for any problem: OR-Tools CP-SAT, exact in integers, in two proven stages.

Role: the optimum the benchmark checks every plan against when the problem is too large to
enumerate: (1) the most coverage (Σ_d min(offered_d, need_d) / need_d, scaled to integers, as
`problem.coverage`), (2) the least cost at that coverage — in one stage when a full cover exists
(the least cost among full covers), else in two. CP-SAT works in exact integer
arithmetic (no floating tolerances) and proves optimality; a stage whose status is not OPTIMAL
raises ReferenceFailed — the benchmark then fails rather than trusting a guess. It shares no
code or library with the planner (which uses its own branch and bound, and HiGHS).

Must not: be imported by the shipped package; it is a dev dependency for checking only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from benchmarks.reference.problem import Answer, Problem

__all__ = ["ReferenceFailed", "Solved", "solve_exactly"]

SECONDS_PER_STAGE = 120.0
WORKERS = 4


class ReferenceFailed(RuntimeError):
    """CP-SAT did not prove a stage optimal (status named in the message)."""


@dataclass(frozen=True)
class Solved:
    answer: Answer
    statuses: tuple[str, str]
    seconds: float


def _model(problem: Problem) -> tuple[Any, list[Any], Any, Any]:
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    items = problem.items
    xs = [model.NewIntVar(0, problem.max_nodes, f"x{index}") for index in range(len(items))]
    model.Add(sum(xs) <= problem.max_nodes)
    tflops = cp_model.LinearExpr.WeightedSum(xs, [i.tflops for i in items])
    vram = cp_model.LinearExpr.WeightedSum(xs, [i.vram for i in items])
    if problem.cap_tflops is not None:
        model.Add(tflops <= problem.cap_tflops)
    if problem.cap_vram is not None:
        model.Add(vram <= problem.cap_vram)
    need_t, need_v = problem.need_tflops, problem.need_vram
    scale_t, scale_v = max(need_t, 1), max(need_v, 1)
    met_t = model.NewIntVar(0, max(need_t, 0), "met_tflops")
    met_v = model.NewIntVar(0, max(need_v, 0), "met_vram")
    model.Add(met_t <= tflops)
    model.Add(met_v <= vram)
    covered = (met_t if need_t > 0 else 1) * scale_v + (met_v if need_v > 0 else 1) * scale_t
    cost = cp_model.LinearExpr.WeightedSum(xs, [i.price for i in items])
    return model, xs, covered, cost


def _solve(model: Any) -> tuple[Any, str, float]:
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = SECONDS_PER_STAGE
    solver.parameters.num_workers = WORKERS
    status = solver.Solve(model)
    name = solver.StatusName(status)
    if status != cp_model.OPTIMAL:
        raise ReferenceFailed(f"CP-SAT stage ended {name}, not OPTIMAL")
    return solver, name, solver.WallTime()


def _undominated(problem: Problem) -> list[int]:
    """Indexes of the items no other item dominates (as big in both dimensions, no dearer; ties
    keep the first). Without caps, swapping a dominated item for its dominator keeps a cover a
    cover and costs no more, so the least-cost cover uses only undominated items."""
    items = problem.items
    if problem.cap_tflops is not None or problem.cap_vram is not None:
        return list(range(len(items)))
    kept = []
    for j, b in enumerate(items):
        dominated = any(
            a.tflops >= b.tflops
            and a.vram >= b.vram
            and a.price <= b.price
            and ((a.tflops, a.vram, -a.price) != (b.tflops, b.vram, -b.price) or i < j)
            for i, a in enumerate(items)
            if i != j
        )
        if not dominated:
            kept.append(j)
    return kept


def _covering_model(problem: Problem, used: list[int]) -> tuple[Any, list[Any]]:
    """Least cost among full covers, in units divided by each dimension's common divisor (exact:
    every total is a multiple of it, so covering ⌈need / g⌉ and staying under ⌊cap / g⌋ is the
    same as covering need and staying under cap)."""
    from ortools.sat.python import cp_model

    items = [problem.items[index] for index in used]
    g_t = math.gcd(*(i.tflops for i in items))
    g_v = math.gcd(*(i.vram for i in items))
    model = cp_model.CpModel()
    xs = [model.NewIntVar(0, problem.max_nodes, f"x{index}") for index in range(len(items))]
    model.Add(sum(xs) <= problem.max_nodes)
    tflops = cp_model.LinearExpr.WeightedSum(xs, [i.tflops // g_t for i in items])
    vram = cp_model.LinearExpr.WeightedSum(xs, [i.vram // g_v for i in items])
    model.Add(tflops >= -(-problem.need_tflops // g_t))
    model.Add(vram >= -(-problem.need_vram // g_v))
    if problem.cap_tflops is not None:
        model.Add(tflops <= problem.cap_tflops // g_t)
    if problem.cap_vram is not None:
        model.Add(vram <= problem.cap_vram // g_v)
    model.Minimize(cp_model.LinearExpr.WeightedSum(xs, [i.price for i in items]))
    return model, xs


def solve_exactly(problem: Problem) -> Solved:
    """Most coverage, then least cost at that coverage; raises ReferenceFailed unless both proven.

    When a full cover exists it is the most coverage there is, so one proven stage (least cost
    among full covers) settles both; only when none exists (max forbids it, or the node limit)
    are the two stages run in the problem's own units."""
    from ortools.sat.python import cp_model

    if problem.items and (problem.need_tflops > 0 or problem.need_vram > 0):
        used = _undominated(problem)
        model, xs = _covering_model(problem, used)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = SECONDS_PER_STAGE
        solver.parameters.num_workers = WORKERS
        status = solver.Solve(model)
        if status == cp_model.OPTIMAL:
            counts = [0] * len(problem.items)
            for index, x in zip(used, xs, strict=True):
                counts[index] = int(solver.Value(x))
            answer = Answer.of(problem, counts)
            return Solved(answer, ("OPTIMAL (full cover)", "OPTIMAL"), solver.WallTime())
        if status != cp_model.INFEASIBLE:
            raise ReferenceFailed(f"CP-SAT covering stage ended {solver.StatusName(status)}, not OPTIMAL")
    model, _, covered, _ = _model(problem)
    model.Maximize(covered)
    first, first_status, first_seconds = _solve(model)
    best_coverage = round(first.ObjectiveValue())
    model, xs, covered, cost = _model(problem)
    model.Add(covered >= best_coverage)
    model.Minimize(cost)
    second, second_status, second_seconds = _solve(model)
    answer = Answer.of(problem, [int(second.Value(x)) for x in xs])
    if answer.coverage != best_coverage:
        raise ReferenceFailed(f"stage 2 coverage {answer.coverage} != proven best {best_coverage}")
    return Solved(answer, (first_status, second_status), first_seconds + second_seconds)
