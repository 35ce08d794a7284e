"""Benchmark: issue 35's capacity targets, seed by seed, and the floor no policy can go under.

Runs `gpupool simulate capacity`'s three policies (gpupool, TensorFusion's replayed rules,
gpupool+consolidation) on the shipped openb-shaped sample (or `--trace`), On-Demand prices, for
each `--seeds`, and prints per seed gpupool+consolidation against TensorFusion on the issue's
targets — idle GPU-hours beyond min and warm ≤ 0.5 ×, cost ≤ 0.9 ×, the same p95 time to
capacity, no violation — each `met` or `NOT met`, with the drains and pods moved; then the floor
(`PolicyReport.floor_gpu_hours`: whole GPUs for what the pods used plus min and warm, every
minute, priced at the pool's cheapest On-Demand GPU) as the best ratio any policy holding min
and warm could print; and the reasons consolidation gave most often for draining nothing.

The reference, TensorFusion's side, is `simulation/capacity/tensorfusion_rules.py`: it imports
nothing of gpupool's planning, decisions or services. Each target can fail either way: the ratios
are printed, not asserted.

Run: .venv/bin/python benchmarks/capacity_targets.py [--seeds 0 1 2] [--days 2] [--trace FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

IDLE_TARGET, COST_TARGET = 0.5, 0.9


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> None:
    from gpupool.simulation.capacity.ledger import PolicyReport
    from gpupool.simulation.capacity.pool_spec import CONSOLIDATING, PoolSpec, cheapest_per_gpu
    from gpupool.simulation.capacity.run import CapacityRun, load_demand, simulate
    from gpupool.simulation.cluster.fates import FatesConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--days", type=float, default=2.0)
    parser.add_argument("--trace", type=Path, default=None)
    args = parser.parse_args()
    pool = PoolSpec(capacity_types=("OnDemand",))
    name, per_gpu = cheapest_per_gpu(pool)
    trace = args.trace or "the shipped openb-shaped sample"
    print(f"{CONSOLIDATING} against tensorfusion, On-Demand, {args.days:g} day(s) of {trace}")
    for seed in args.seeds:
        run = CapacityRun(days=args.days, fates=FatesConfig(seed=seed), pool=pool)
        reports: dict[str, PolicyReport] = {
            r.policy: r for r in simulate(run, load_demand(args.trace, window_seconds=run.window_seconds))
        }
        ours, base = reports[CONSOLIDATING], reports["tensorfusion"]
        idle = ours.idle_beyond_reserve / base.idle_beyond_reserve
        cost = ours.cost / base.cost
        floor_idle = ours.floor_beyond_reserve / base.idle_beyond_reserve
        floor_cost = ours.floor_gpu_hours * float(per_gpu) / base.cost
        violations = sum(ours.violations.values())
        print(f"seed {seed}:")
        print(
            f"  idle beyond min and warm {ours.idle_beyond_reserve:.1f} / {base.idle_beyond_reserve:.1f} "
            f"GPU-h = {idle:.2f} × (target ≤ {IDLE_TARGET}: {_verdict(idle <= IDLE_TARGET)}; "
            f"floor {ours.floor_beyond_reserve:.1f} GPU-h = {floor_idle:.2f} ×)"
        )
        print(
            f"  cost ${ours.cost:.2f} / ${base.cost:.2f} = {cost:.2f} × (target ≤ {COST_TARGET}: "
            f"{_verdict(cost <= COST_TARGET)}; floor {ours.floor_gpu_hours:.1f} GPU-h at {name}'s "
            f"${per_gpu:.3f} = {floor_cost:.2f} ×)"
        )
        print(
            f"  p95 time to capacity {ours.ttc_p95:g} s / {base.ttc_p95:g} s "
            f"({_verdict(ours.ttc_p95 == base.ttc_p95)}); violations {violations} "
            f"({_verdict(violations == 0)}); drains {ours.counters.get('drains', 0)}, "
            f"pods moved {ours.counters.get('pods_moved', 0)}"
        )
        for why, count in list(ours.consolidation_refusals().items())[:3]:
            print(f"  consolidation drained nothing {count} time(s): {why}")


if __name__ == "__main__":
    main()
