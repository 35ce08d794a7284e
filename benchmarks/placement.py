"""Placement benchmark: replay the openb production trace through every mode, side by side.

Prints, for Random-fit, Best-fit, TensorFusion's three modes and FragmentationAware — at
inflation 1.3 (GPU requested = 1.3 × the cluster's GPUs, protocol in docs/placement.md) — GPUs,
GPU requested, allocated, unallocated (fragmented against the trace's request mix) and free GPUs,
tasks placed / failed, decisions per second, and each mode's unallocated GPUs against Best-fit.
Then the two checks of issue 12: FragmentationAware at least 40 % fewer unallocated GPUs than
Best-fit, and more GPUs allocated than each of TensorFusion's modes — printed as measured, met or
not.

Usage: .venv/bin/python benchmarks/placement.py [--data ../shared/data/openb] [--inflation 1.3]
       [--seed 0] [--placement MODE]... [--plot OUT.png]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DEFAULT_DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "openb").resolve()
TENSORFUSION_MODES = ("CompactFirst", "LowLoadFirst", "NodeCompactGPULowLoad")


def main() -> int:
    from gpupool.cli.simulate_common import load_pyplot
    from gpupool.cli.simulate_placement import plot_results, read_trace, results_table
    from gpupool.simulation.placement import PLACEMENTS, catalog_specs, replay

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with the openb CSV files")
    parser.add_argument("--inflation", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--placement", action="append", choices=PLACEMENTS)
    parser.add_argument("--plot", type=Path, help="write the allocated-vs-arrived PNG here")
    args = parser.parse_args()
    nodes_csv = args.data / "openb_node_list_gpu_node.csv"
    pods_csv = args.data / "openb_pod_list_default.csv"
    nodes, tasks = read_trace(nodes_csv, pods_csv)
    print(f"trace: {nodes_csv} ({len(nodes)} nodes), {pods_csv} ({len(tasks)} tasks)")
    print(f"inflation {args.inflation}, seed {args.seed}")
    specs = catalog_specs()
    results = []
    for placement in args.placement or PLACEMENTS:
        started = time.perf_counter()
        result = replay(
            nodes,
            tasks,
            placement,
            inflation=args.inflation,
            seed=args.seed,
            specs=specs,
            clock=time.perf_counter,
        )
        results.append(result)
        print(f"  {placement}: done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    print(results_table(results))
    by_mode = {r.placement: r for r in results}
    fa, best = by_mode.get("FragmentationAware"), by_mode.get("BestFit")
    if fa is not None and best is not None and best.unallocated_gpus > 0:
        fewer = 100 * (1 - fa.unallocated_gpus / best.unallocated_gpus)
        fewer_free = 100 * (1 - fa.free_gpus / best.free_gpus) if best.free_gpus else 0.0
        verdict = "met" if fewer >= 40 else "NOT met"
        print(
            f"FragmentationAware vs Best-fit: {fewer:.1f} % fewer unallocated GPUs "
            f"({fa.unallocated_gpus:.1f} vs {best.unallocated_gpus:.1f}); {fewer_free:.1f} % fewer free GPUs "
            f"— target 40 %: {verdict}"
        )
    if fa is not None:
        for mode in TENSORFUSION_MODES:
            other = by_mode.get(mode)
            if other is not None:
                more = fa.gpu_allocated - other.gpu_allocated
                verdict = "more" if more > 0 else "NOT more"
                print(
                    f"FragmentationAware vs {mode}: {more:+.1f} GPUs allocated "
                    f"({fa.gpu_allocated:.1f} vs {other.gpu_allocated:.1f}) — {verdict}"
                )
    if args.plot is not None:
        plot_results(results, args.plot, load_pyplot())
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
