"""Benchmark: cost of gpupool's exact plans against the exact optimum and TensorFusion's single-type rule.

Runs ≥ 200 seeded scenarios over the bundled catalogs (cloud, region, gpuRequirements, gap, and a
maxResources clip in some), scenarios on 100 distinct synthetic offerings, and small cases (≤ 4
offerings, ≤ 5 nodes) checked against every possible plan. For each it
plans with `plan_pool_capacity` / `select_cheapest` (timed), then compares:
- the exact optimum: brute-force enumeration when the case is small, else the HiGHS MILP in
  `selection_reference` (a separate formulation from the planner's search);
- the single-type rule (one offering × N, cheapest total, under the same max and node limit).
Prints mean and worst cost ratios and p50/p99 planning time, wall clock and CPU (the CPU time
of this process, all threads: HiGHS runs some work in parallel). Exit 1 if a plan ever costs more
than the single-type rule or differs from the exact optimum (coverage first, then cost).

Run: .venv/bin/python benchmarks/plan_cost.py [--scenarios N] [--seed S] [--pure] [--synthetic-clipped N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from fractions import Fraction
from typing import Any

from benchmarks.reference.enumeration import select_by_enumeration, select_by_milp
from benchmarks.reference.single_type import select_single_type
from gpupool.core.catalog import load_catalog
from gpupool.core.planning.cheapest import Candidate, Selection, _coverage, select_cheapest
from gpupool.core.planning.gap import CurrentCapacity, Resources, plan_capacity_gap
from gpupool.core.planning.pool_plan import offering_candidates, plan_pool_capacity, solver_units
from gpupool.core.planning.requirements import select_matching

GI = 2**30


class Req:
    def __init__(self, key: str, operator: str, *values: str) -> None:
        self.key, self.operator, self.values = key, operator, list(values)


def _requirements(rng: random.Random, cloud: str, region: str) -> list[Req]:
    menu: list[list[Req]] = [
        [],
        [Req("karpenter.sh/capacity-type", "In", "OnDemand")],
        [Req("karpenter.sh/capacity-type", "In", "Spot")],
        [
            Req("kubernetes.io/arch", "In", "amd64"),
            Req("karpenter.sh/capacity-type", "In", "OnDemand", "Spot"),
        ],
        [Req("karpenter.k8s.aws/instance-gpu-count", "Lt", "5")],
    ]
    models = ["T4", "A10G", "L4", "L40S", "A100", "H100"] if cloud == "aws" else ["T4", "A10", "V100", "A100"]
    chosen = list(rng.choice(menu))
    if rng.random() < 0.4:
        chosen.append(Req("tensor-fusion.ai/gpu-model", "In", *rng.sample(models, rng.randint(1, 3))))
    if rng.random() < 0.2:
        zones = load_catalog(cloud).region(region).zones  # type: ignore[arg-type, union-attr]
        chosen.append(Req("topology.kubernetes.io/zone", "In", rng.choice(zones)))
    return chosen


def _exact(candidates: list[Candidate], units: dict[str, Any], max_nodes: int) -> tuple[int, int, str]:
    """(coverage, cost, method) of the exact optimum by an independent method."""
    small = len(candidates) <= 4 and max_nodes <= 6
    if small:
        best = select_by_enumeration(candidates, **units, max_nodes=max_nodes)
        return (
            _coverage(best.tflops, best.vram, units["need_tflops"], units["need_vram"]),
            best.cost,
            "enumeration",
        )
    milp = select_by_milp(candidates, **units, max_nodes=max_nodes)
    return milp.coverage, milp.cost, "milp"


def _record(
    rows: list[dict[str, Any]],
    label: str,
    found: Selection,
    seconds: tuple[float, float],
    candidates: list[Candidate],
    units: dict[str, Any],
    max_nodes: int,
) -> None:
    coverage = _coverage(found.tflops, found.vram, units["need_tflops"], units["need_vram"])
    exact_coverage, exact_cost, method = _exact(candidates, units, max_nodes)
    single = select_single_type(candidates, **units, max_nodes=max_nodes)
    rows.append(
        {
            "label": label,
            "seconds": seconds[0],
            "cpu_seconds": seconds[1],
            "offerings": len(candidates),
            "nodes": found.nodes,
            "covers": found.covers_need,
            "proven": found.proven_optimal,
            "method": method,
            "exact_ok": coverage >= exact_coverage
            and (coverage > exact_coverage or found.cost <= exact_cost),
            "vs_exact": found.cost / exact_cost if exact_cost and coverage == exact_coverage else None,
            "vs_single": found.cost / single.cost if single is not None and found.covers_need else None,
            "worse_than_single": single is not None and (not found.covers_need or found.cost > single.cost),
        }
    )


def catalog_scenarios(rng: random.Random, count: int, *, accelerate: bool = True) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while len(rows) < count:
        cloud = "aws" if rng.random() < 0.75 else "alibaba"
        catalog = load_catalog(cloud)  # type: ignore[arg-type]
        region = rng.choice(catalog.region_names)
        requirements = _requirements(rng, cloud, region)
        scale = rng.choice([1, 1, 1, 4, 16])
        tflops = Fraction(rng.randint(65, 1200) * scale)
        vram = Fraction(rng.randint(16, 240) * scale * GI)
        clipped = rng.random() < 0.2
        gap = plan_capacity_gap(
            minimum=Resources(tflops, vram),
            warm=Resources(),
            max_tflops=tflops * Fraction(rng.randint(40, 110), 100) if clipped else None,
            max_vram=vram * Fraction(rng.randint(40, 110), 100) if clipped else None,
            current=CurrentCapacity(),
        )
        matching = select_matching(catalog.offerings(region), requirements)  # type: ignore[arg-type]
        candidates, _ = offering_candidates(matching.offerings)
        if not candidates:
            continue
        start, cpu = time.perf_counter(), time.process_time()
        plan = plan_pool_capacity(
            gap,
            catalog,
            region=region,
            requirements=requirements,
            accelerate=accelerate,  # type: ignore[arg-type]
        )
        seconds = (time.perf_counter() - start, time.process_time() - cpu)
        units = solver_units(gap)
        found = select_cheapest(candidates, **units, accelerate=accelerate)  # the plan's own selection
        assert found.cost == round(plan.hourly_cost * 10**6), "plan and selection disagree"
        _record(rows, f"{cloud}/{region}", found, seconds, candidates, units, 100)
    return rows


def small_scenarios(rng: random.Random, count: int, *, accelerate: bool = True) -> list[dict[str, Any]]:
    """Up to 4 catalog offerings and at most 5 nodes: small enough to enumerate every plan."""
    rows: list[dict[str, Any]] = []
    catalog = load_catalog("aws")
    offerings = catalog.offerings("us-east-1")
    pool, _ = offering_candidates(offerings)
    for _ in range(count):
        candidates = rng.sample(pool, rng.randint(1, 4))
        units: dict[str, Any] = {
            "need_tflops": rng.randint(0, 1500) * 1000,
            "need_vram": rng.randint(0, 300) * 1024,
            "cap_tflops": rng.choice([None, rng.randint(100, 2000) * 1000]),
            "cap_vram": rng.choice([None, rng.randint(16, 400) * 1024]),
        }
        start, cpu = time.perf_counter(), time.process_time()
        found = select_cheapest(candidates, **units, max_nodes=5, accelerate=accelerate)
        seconds = (time.perf_counter() - start, time.process_time() - cpu)
        _record(rows, "small", found, seconds, candidates, units, 5)
    return rows


def synthetic_scenarios(
    rng: random.Random, count: int, offerings: int = 100, *, accelerate: bool = True, clipped: bool = False
) -> list[dict[str, Any]]:
    """100 distinct offerings shaped like GPU instances (1–8 GPUs, 16–141 GiB per GPU); with
    `clipped`, max sits at 50–100 % of the need in both dimensions ("fill what max allows")."""
    rows: list[dict[str, Any]] = []
    for _ in range(count):
        candidates = []
        for i in range(offerings):
            gpus = rng.choice([1, 1, 1, 2, 4, 8])
            per_gpu_tflops = rng.choice([65, 121, 125, 312, 362, 989])
            per_gpu_vram = rng.choice([16, 24, 32, 40, 48, 80, 141])
            price = int(per_gpu_tflops * gpus * rng.uniform(0.002, 0.012) * 10**6)
            candidates.append(
                Candidate(
                    f"synthetic-{i:03d}", per_gpu_tflops * gpus * 1000, per_gpu_vram * gpus * 1024, price
                )
            )
        need_tflops, need_vram = rng.randint(65, 4000) * 1000, rng.randint(16, 800) * 1024
        units = {
            "need_tflops": need_tflops,
            "need_vram": need_vram,
            "cap_tflops": int(need_tflops * rng.uniform(0.5, 1.0)) if clipped else None,
            "cap_vram": int(need_vram * rng.uniform(0.5, 1.0)) if clipped else None,
        }
        start, cpu = time.perf_counter(), time.process_time()
        found = select_cheapest(candidates, **units, accelerate=accelerate)
        seconds = (time.perf_counter() - start, time.process_time() - cpu)
        _record(
            rows, "synthetic-100" + ("-clipped" if clipped else ""), found, seconds, candidates, units, 100
        )
    return rows


def _quiet_highs() -> None:
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            import highspy

            highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(name: str, rows: list[dict[str, Any]]) -> bool:
    times = [r["seconds"] * 1000 for r in rows]
    cpu_times = [r["cpu_seconds"] * 1000 for r in rows]
    vs_exact = [r["vs_exact"] for r in rows if r["vs_exact"] is not None]
    vs_single = [r["vs_single"] for r in rows if r["vs_single"] is not None]
    methods = {m: sum(r["method"] == m for r in rows) for m in ("enumeration", "milp")}
    print(
        f"\n== {name}: {len(rows)} scenarios "
        f"({methods['enumeration']} checked by enumeration, {methods['milp']} by MILP)"
    )
    print(
        f"offerings per scenario: {min(r['offerings'] for r in rows)}–{max(r['offerings'] for r in rows)}; "
        f"nodes planned: up to {max(r['nodes'] for r in rows)}; "
        f"gap fully covered in {sum(r['covers'] for r in rows)}"
    )
    if vs_exact:
        print(
            f"cost / exact optimum: mean {statistics.mean(vs_exact):.6f}, "
            f"worst {max(vs_exact):.6f} (over {len(vs_exact)})"
        )
    if vs_single:
        print(
            f"cost / single-type rule: mean {statistics.mean(vs_single):.4f}, worst {max(vs_single):.4f}, "
            f"best {min(vs_single):.4f}; "
            f"strictly cheaper in {sum(v < 1 for v in vs_single)} of {len(vs_single)}"
        )
    for label, values in (("wall", times), ("CPU", cpu_times)):
        print(
            f"planning time ({label}): p50 {_percentile(values, 0.5):.2f} ms, "
            f"p99 {_percentile(values, 0.99):.2f} ms, max {max(values):.2f} ms; "
            f"over 50 ms in {sum(t > 50 for t in values)}"
        )
    filled = [r["seconds"] * 1000 for r in rows if not r["covers"]]
    if filled:
        print(
            f"  of which fill what max allows ({len(filled)}): p50 {_percentile(filled, 0.5):.2f} ms, "
            f"p99 {_percentile(filled, 0.99):.2f} ms, max {max(filled):.2f} ms; "
            f"over 50 ms in {sum(t > 50 for t in filled)}"
        )
    unproven = sum(not r["proven"] for r in rows)
    if unproven:
        print(f"not proven optimal within the effort limit: {unproven}")
        for r in rows:
            if not r["proven"]:
                kind = "covers the gap" if r["covers"] else "fills under max"
                print(f"  {r['label']}: {r['nodes']} nodes, {kind}, {r['offerings']} offerings")
    bad_exact = [r for r in rows if not r["exact_ok"]]
    bad_single = [r for r in rows if r["worse_than_single"]]
    for r in bad_exact:
        print(f"FAIL: {r['label']}: differs from the exact optimum")
    for r in bad_single:
        print(f"FAIL: {r['label']}: worse than the single-type rule")
    return not bad_exact and not bad_single


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=240, help="catalog scenarios (default 240)")
    parser.add_argument("--synthetic", type=int, default=40, help="100-offering scenarios (default 40)")
    parser.add_argument("--small", type=int, default=60, help="enumerable scenarios (default 60)")
    parser.add_argument(
        "--synthetic-clipped",
        type=int,
        default=0,
        help="100-offering scenarios clipped by max in both dimensions (a stress test; default 0)",
    )
    parser.add_argument("--seed", type=int, default=20251129)
    parser.add_argument("--pure", action="store_true", help="time the pure-Python search only (no HiGHS)")
    args = parser.parse_args()
    _quiet_highs()
    rng = random.Random(args.seed)
    mode = " (pure Python, no HiGHS accelerator)" if args.pure else ""
    accelerate = not args.pure
    ok = report(f"bundled catalogs{mode}", catalog_scenarios(rng, args.scenarios, accelerate=accelerate))
    synthetic = synthetic_scenarios(rng, args.synthetic, accelerate=accelerate)
    ok = report(f"100 distinct offerings{mode}", synthetic) and ok
    small = small_scenarios(rng, args.small, accelerate=accelerate)
    ok = report(f"small cases, checked by enumeration{mode}", small) and ok
    if args.synthetic_clipped:
        clipped = synthetic_scenarios(rng, args.synthetic_clipped, accelerate=accelerate, clipped=True)
        ok = report(f"100 distinct offerings clipped by max{mode}", clipped) and ok
    print("\nresult:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
