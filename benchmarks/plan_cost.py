"""Benchmark: gpupool's plans against a proven optimum from an independent solver, and TensorFusion's rule.

Every scenario (`plan_cost_scenarios`: ≥ 200 over the bundled catalogs, 100-offering synthetic
ones, small ones) is planned through the one pipeline the launch function and `gpupool plan`
call — `plan_capacity(PoolSnapshot, offerings)` — timed (wall and CPU). Then, per scenario:
- the plan is checked against maxResources in exact quantities and against the node limit;
- the optimum comes from an exact reference that shares no code or solver with the planner:
  without max, the least-cost cover by dynamic programming (`reference/cover_dp.py`); otherwise
  OR-Tools CP-SAT (`reference/cpsat.py`: exact integers, every stage must end OPTIMAL); for small
  scenarios both enumeration of every plan (`reference/enumeration.py`) and CP-SAT, which must
  agree. Every reference answer is checked for feasibility (caps, node limit, its own totals);
- the plan's (coverage, cost) must equal the optimum's: a worse plan fails the run, and so does
  a better one (then the reference is wrong);
- the single-type rule (one offering × N, cheapest total) under the same limits, for comparison.
Prints, per group, how many scenarios were checked and how, cost ratios, planning time
percentiles, and every failure. Exit 1 on any failure.

Run: .venv/bin/python benchmarks/plan_cost.py [--scenarios N] [--synthetic N] [--small N]
     [--synthetic-clipped N] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks.*` when run as a script

from benchmarks.plan_cost_scenarios import (
    Scenario,
    catalog_scenarios,
    problem_of,
    small_scenarios,
    synthetic_scenarios,
    units,
)
from benchmarks.reference.cover_dp import cheapest_cover
from benchmarks.reference.cpsat import ReferenceFailed, solve_exactly
from benchmarks.reference.enumeration import enumerate_best
from benchmarks.reference.problem import coverage, violations
from benchmarks.reference.single_type import single_type
from gpupool.core.planning.capacity_plan import plan_capacity
from gpupool.core.planning.offerings import offering_matches
from gpupool.core.planning.snapshot import PoolSnapshot

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Row:
    label: str
    seconds: float
    cpu_seconds: float
    offerings: int
    nodes: int
    covers: bool
    proven: bool
    method: str
    vs_single: float | None = None
    failures: list[str] = field(default_factory=list)


def _plan_limits(scenario: Scenario, offerings: list[object], nodes: int) -> list[str]:
    """The plan against maxResources in exact quantities and against the node limit."""
    found = []
    if nodes > scenario.max_nodes:
        found.append(f"plan has {nodes} nodes > limit {scenario.max_nodes}")
    if scenario.cap is not None:
        tflops = sum((o.tflops.value for o in offerings), Fraction(0))  # type: ignore[attr-defined]
        vram = sum((o.vram.value for o in offerings), Fraction(0))  # type: ignore[attr-defined]
        if tflops > scenario.cap[0] or vram > scenario.cap[1]:
            found.append(f"plan adds {float(tflops)} TFLOPS / {float(vram)} B past maxResources")
    return found


def check(scenario: Scenario) -> Row:
    snapshot = PoolSnapshot(cluster_name="bench", pool=scenario.pool)
    start, cpu = time.perf_counter(), time.process_time()
    plan = plan_capacity(snapshot, scenario.offerings, now=NOW, max_nodes=scenario.max_nodes)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    provisioner = scenario.pool.spec.node_manager_config.node_provisioner
    requirements = provisioner.gpu_requirements if provisioner else []
    problem = problem_of(scenario, [o for o in scenario.offerings if offering_matches(o, requirements)])
    planned = [units(o) for o in plan.offerings]
    plan_t, plan_v = sum(i.tflops for i in planned), sum(i.vram for i in planned)
    plan_cover = coverage(plan_t, plan_v, problem.need_tflops, problem.need_vram)
    plan_cost = sum(i.price for i in planned)
    small = len(problem.items) <= 4 and problem.max_nodes <= 6
    covered = None if small else cheapest_cover(problem)
    method = "enumeration + CP-SAT" if small else "DP" if covered is not None else "CP-SAT"
    row = Row(
        scenario.label,
        seconds,
        cpu_seconds,
        len(problem.items),
        len(planned),
        plan.covers_gap,
        plan.proven_optimal,
        method,
    )
    row.failures += _plan_limits(scenario, list(plan.offerings), len(planned))
    try:
        optimum = covered if covered is not None else solve_exactly(problem).answer
    except ReferenceFailed as error:
        row.failures.append(f"reference: {error}")
        return row
    row.failures += [f"reference answer: {v}" for v in violations(problem, optimum)]
    if small:
        enumerated = enumerate_best(problem)
        row.failures += [f"enumerated answer: {v}" for v in violations(problem, enumerated)]
        if (enumerated.coverage, enumerated.cost) != (optimum.coverage, optimum.cost):
            row.failures.append("enumeration and CP-SAT disagree")
    mine, best = (-plan_cover, plan_cost), (-optimum.coverage, optimum.cost)
    if mine < best:
        row.failures.append(f"plan beats the 'optimum' {best} with {mine}: the reference is wrong")
    elif mine > best:
        row.failures.append(f"plan {mine} is worse than the optimum {best}")
    single = single_type(problem)
    if single is not None and plan.covers_gap and single.cost:
        row.vs_single = plan_cost / single.cost
        if plan_cost > single.cost:
            row.failures.append("plan costs more than the single-type rule")
    return row


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(name: str, rows: list[Row]) -> bool:
    methods = {m: sum(r.method == m for r in rows) for m in ("CP-SAT", "DP", "enumeration + CP-SAT")}
    failed = [r for r in rows if r.failures]
    print(f"\n== {name}: {len(rows)} scenarios, every one checked against a proven optimum")
    both = methods["enumeration + CP-SAT"]
    print(
        f"reference: cover DP {methods['DP']}, CP-SAT {methods['CP-SAT']}, "
        f"enumeration and CP-SAT (which must agree) {both}"
    )
    print(
        f"offerings per scenario: {min(r.offerings for r in rows)}–{max(r.offerings for r in rows)}; "
        f"nodes planned: up to {max(r.nodes for r in rows)}; gap fully covered in "
        f"{sum(r.covers for r in rows)}; plan equals the optimum (coverage, then cost) in "
        f"{len(rows) - len(failed)} of {len(rows)}"
    )
    vs_single = [r.vs_single for r in rows if r.vs_single is not None]
    if vs_single:
        print(
            f"cost / single-type rule: mean {statistics.mean(vs_single):.4f}, worst {max(vs_single):.4f}, "
            f"best {min(vs_single):.4f}; "
            f"strictly cheaper in {sum(v < 1 for v in vs_single)} of {len(vs_single)}"
        )
    for label, values in (
        ("wall", [r.seconds * 1000 for r in rows]),
        ("CPU", [r.cpu_seconds * 1000 for r in rows]),
    ):
        print(
            f"planning time ({label}): p50 {_percentile(values, 0.5):.2f} ms, "
            f"p99 {_percentile(values, 0.99):.2f} ms, max {max(values):.2f} ms"
        )
    unproven = [r for r in rows if not r.proven]
    if unproven:
        print(f"planner reported 'not proven optimal' (effort limit) in {len(unproven)}")
    for r in failed:
        print(f"FAIL: {r.label}: {'; '.join(r.failures)}")
    return not failed


def _quiet_highs() -> None:
    """HiGHS prints a banner on stdout the first time a solver is built; build one silently."""
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            import highspy

            highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=240, help="catalog scenarios (default 240)")
    parser.add_argument("--synthetic", type=int, default=40, help="100-offering scenarios (default 40)")
    parser.add_argument("--small", type=int, default=60, help="enumerable scenarios (default 60)")
    parser.add_argument(
        "--synthetic-clipped", type=int, default=10, help="100-offering scenarios clipped by max (default 10)"
    )
    parser.add_argument("--seed", type=int, default=20251129)
    args = parser.parse_args()
    _quiet_highs()
    rng = random.Random(args.seed)
    groups = [
        ("bundled catalogs", catalog_scenarios(rng, args.scenarios)),
        ("100 distinct offerings", synthetic_scenarios(rng, args.synthetic)),
        ("small cases (≤ 4 offerings, ≤ 5 nodes)", small_scenarios(rng, args.small)),
        (
            "100 distinct offerings clipped by max",
            synthetic_scenarios(rng, args.synthetic_clipped, clipped=True),
        ),
    ]
    ok = True
    for name, scenarios in groups:
        if scenarios:
            ok = report(name, [check(s) for s in scenarios]) and ok
    print("\nresult:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
