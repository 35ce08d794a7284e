"""`gpupool simulate placement`: its flags, the trace files read, each mode run, the outputs.

Role: the `placement` subcommand of `gpupool simulate` — `register(sub)` adds it and its flags;
`run(args)` is the I/O around `gpupool.simulation.placement`: read the two CSV files as they are
(parsed by `gpupool.simulation.openb`), check every argument before any work (bad input: one
clear line, exit 2, nothing written), show a progress bar on a terminal, print a table or JSON,
write `--assignments` and `--plot` (the GPU allocated as the workload arrives per mode, and
below it each mode's gap to the best mode at that point, where the differences show). With no
`--nodes`/`--pods`, the openb-shaped sample the package ships (`gpupool.simulation.traces`) is
replayed. The simulation is imported only when it runs.

Must not: decide placement or compute figures (the core does).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text
from gpupool.cli.simulate_common import load_pyplot, positive_float
from gpupool.core.model.placement_mode import PLACEMENT_MODES

if TYPE_CHECKING:
    from gpupool.simulation.openb import TraceNode, TraceTask
    from gpupool.simulation.placement import Assignment, ModeResult

__all__ = [
    "HELP",
    "PLACEMENTS",
    "PROTOCOLS",
    "assignments_csv",
    "plot_results",
    "read_trace",
    "register",
    "result_json",
    "results_table",
    "run",
]

HELP = "replay an openb-format trace (nodes, pods) through every placement mode and compare"
# `gpupool.simulation.placement.PLACEMENTS`, spelled out so that registering imports no simulation.
PLACEMENTS = ("RandomFit", "BestFit", "DotProduct", "FGD", *PLACEMENT_MODES)
# `gpupool.simulation.placement.PROTOCOLS`: who places CPU-only tasks.
PROTOCOLS = ("rule", "least-allocated")


EPILOG = """\
Without --nodes and --pods: the openb-shaped sample the package ships (125 nodes, 630 GPUs, 815
pods, generated from openb's published mix; gpupool/simulation/traces). The full trace: the two
CSV files of github.com/alibaba/clusterdata, folder cluster-trace-gpu-v2023/csv, e.g.
  gpupool simulate placement --nodes csv/openb_node_list_gpu_node.csv --pods csv/openb_pod_list_default.csv
See docs/placement.md for the modes and the figures.
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    placement = sub.add_parser(
        "placement",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    placement.add_argument(
        "--nodes",
        type=Path,
        metavar="NODES.csv",
        help="openb node list (default: the shipped openb-shaped sample; give --pods with it)",
    )
    placement.add_argument(
        "--pods",
        type=Path,
        metavar="PODS.csv",
        help="openb pod list (default: the shipped openb-shaped sample; give --nodes with it)",
    )
    placement.add_argument(
        "--placement",
        action="append",
        choices=PLACEMENTS,
        metavar="MODE",
        help=f"placement to replay (repeatable; default: all of {', '.join(PLACEMENTS)})",
    )
    placement.add_argument(
        "--inflation",
        type=positive_float,
        default=1.3,
        metavar="X",
        help="repeat the pod list until GPU requested reaches this times the cluster's GPUs (default 1.3)",
    )
    placement.add_argument(
        "--seed", type=int, default=0, metavar="N", help="breaks exact score ties; seeds Random-fit"
    )
    placement.add_argument(
        "--cpu-only",
        choices=PROTOCOLS,
        default="rule",
        help="who places CPU-only tasks: the placement under test (default) or LeastAllocated",
    )
    placement.add_argument(
        "--assignments", type=Path, metavar="OUT.csv", help="write pod,node,gpus (needs one --placement)"
    )
    placement.add_argument("--json", action="store_true", help="print JSON instead of a table")
    placement.add_argument(
        "--plot",
        type=Path,
        metavar="OUT.png",
        help="PNG of GPU allocated as the workload arrives, per mode, and each mode's gap to the best "
        "(needs matplotlib)",
    )


def read_trace(nodes_path: Path, pods_path: Path) -> tuple[list[TraceNode], list[TraceTask]]:
    from gpupool.simulation.openb import TraceError, parse_nodes, parse_tasks, split_csv

    try:
        header, rows = split_csv(read_text(nodes_path, what="the node list"), source=str(nodes_path))
        nodes = parse_nodes(header, rows, source=str(nodes_path))
        header, rows = split_csv(read_text(pods_path, what="the pod list"), source=str(pods_path))
        tasks = parse_tasks(header, rows, source=str(pods_path))
    except TraceError as exc:
        raise UserError(str(exc)) from None
    return nodes, tasks


def result_json(result: ModeResult) -> dict[str, Any]:
    return {
        "placement": result.placement,
        "protocol": result.protocol,
        "gpusTotal": result.gpus_total,
        "gpuRequested": round(result.gpu_requested, 3),
        "gpuAllocated": round(result.gpu_allocated, 3),
        "unallocatedGpus": round(result.unallocated_gpus, 3),
        "freeGpus": round(result.free_gpus, 3),
        "tasksPlaced": result.tasks_placed,
        "tasksFailed": result.tasks_failed,
        "decisionsPerSecond": round(result.decisions_per_second, 1),
    }


def assignments_csv(assignments: Sequence[Assignment]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["pod", "node", "gpus"])
    for a in assignments:
        writer.writerow([a.pod, a.node, ";".join(f"{index}:{milli}" for index, milli in a.gpus)])
    return out.getvalue()


def results_table(results: Sequence[ModeResult]) -> str:
    best_fit = next((r for r in results if r.placement == "BestFit"), None)
    lines = [
        f"{'placement':<22} {'GPUs':>6} {'requested':>10} {'allocated':>10} {'unallocated':>11} "
        f"{'free':>8} {'placed':>7} {'failed':>7} {'decisions/s':>11}  vs Best-fit"
    ]
    for r in results:
        ratio = ""
        if best_fit is not None and best_fit.unallocated_gpus > 0:
            ratio = f"{100 * (r.unallocated_gpus / best_fit.unallocated_gpus - 1):+.1f} %"
        lines.append(
            f"{r.placement:<22} {r.gpus_total:>6} {r.gpu_requested:>10.1f} {r.gpu_allocated:>10.1f} "
            f"{r.unallocated_gpus:>11.1f} {r.free_gpus:>8.1f} {r.tasks_placed:>7} {r.tasks_failed:>7} "
            f"{r.decisions_per_second:>11.0f}  {ratio}"
        )
    lines.append(
        "unallocated: free GPU capacity the trace's request mix can no longer use (docs/placement.md)"
    )
    return "\n".join(lines)


def _progress(placement: str) -> Any:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        filled = done * 30 // max(total, 1)
        end = "\n" if done == total else ""
        print(
            f"\r{placement:<22} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}",
            end=end,
            file=sys.stderr,
        )

    return show


def _check_writable(path: Path | None, flag: str) -> None:
    if path is not None and not path.parent.is_dir():
        raise UserError(f"{flag} {path}: folder {path.parent} does not exist")


def gaps_to_best(
    results: Sequence[ModeResult], points: int = 400
) -> tuple[list[float], dict[str, list[float]]]:
    """Each mode's GPU allocated below the best mode's, at `points` amounts of GPU requested
    (each curve read as a step function: what was allocated once that much had arrived)."""
    import bisect

    end = min(r.curve[-1][0] for r in results)
    grid = [end * i / (points - 1) for i in range(points)]

    def at(curve: Sequence[tuple[float, float]], x: float) -> float:
        index = bisect.bisect_right([c[0] for c in curve], x) - 1
        return curve[max(index, 0)][1]

    values = {r.placement: [at(r.curve, x) for x in grid] for r in results}
    best = [max(column) for column in zip(*values.values(), strict=True)]
    return grid, {name: [b - v for b, v in zip(best, row, strict=True)] for name, row in values.items()}


def plot_results(results: Sequence[ModeResult], path: Path, pyplot: Any, *, trace: str = "") -> None:
    figure, (curves, gaps) = pyplot.subplots(
        2, 1, figsize=(10.5, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    for r in results:
        curves.plot([c[0] for c in r.curve], [c[1] for c in r.curve], label=r.placement, linewidth=1.2)
    total = results[0].gpus_total
    curves.axhline(total, color="grey", linestyle=":", linewidth=0.8, label=f"GPUs ({total})")
    curves.set_ylabel("GPU allocated")
    curves.set_title("GPU allocated as the workload arrives", fontsize=9)
    curves.legend(fontsize=8)
    grid, gap = gaps_to_best(results)
    for r in results:
        final = r.gpu_allocated
        gaps.plot(
            grid, gap[r.placement], label=f"{r.placement}: {final:.1f} allocated at the end", linewidth=1.2
        )
    differing = [
        x for x, column in zip(grid, zip(*gap.values(), strict=True), strict=True) if max(column) > 0
    ]
    if differing:  # zoom both panels onto where the modes part ways
        start = differing[0] * 0.9
        low = min(v for r in results for x, v in r.curve if x >= start)
        curves.set_xlim(start, grid[-1])
        curves.set_ylim(low * 0.98, total * 1.02)
        curves.set_title(
            f"GPU allocated as the workload arrives (zoomed: from {start:.0f} GPU requested, where "
            "the modes part ways)",
            fontsize=9,
        )
    gaps.set_xlabel("GPU requested by arrived tasks")
    gaps.set_ylabel("GPUs below the best")
    gaps.set_title("each mode's gap to the best mode at that point (0 = the best)", fontsize=9)
    gaps.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.suptitle(f"Placement modes compared on {trace or 'the trace'}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def run(args: argparse.Namespace) -> int:
    from gpupool.simulation.openb import TraceError
    from gpupool.simulation.placement import catalog_specs, replay, spec_for

    placements: list[str] = list(dict.fromkeys(args.placement or PLACEMENTS))
    if args.assignments is not None and len(placements) != 1:
        raise UserError("--assignments needs exactly one --placement (the file has no placement column)")
    _check_writable(args.assignments, "--assignments")
    _check_writable(args.plot, "--plot")
    if (args.nodes is None) != (args.pods is None):
        raise UserError("--nodes and --pods go together (or neither: the shipped sample)")
    pyplot = load_pyplot() if args.plot is not None else None
    if args.nodes is None:
        from gpupool.simulation.traces import sample_paths

        args.nodes, args.pods = sample_paths()
        trace = "the shipped openb-shaped sample"
    else:
        trace = f"{args.nodes.name} + {args.pods.name}"
    nodes, tasks = read_trace(args.nodes, args.pods)
    specs = catalog_specs()
    defaulted = sorted({n.model for n in nodes if n.gpus and not spec_for(n.model, specs).known})
    if defaulted:
        print(
            f"note: GPU models not in the catalog take the default spec: {', '.join(defaulted)}",
            file=sys.stderr,
        )
    results: list[ModeResult] = []
    for placement in placements:
        try:
            results.append(
                replay(
                    nodes,
                    tasks,
                    placement,
                    inflation=args.inflation,
                    seed=args.seed,
                    specs=specs,
                    clock=time.perf_counter,
                    progress=_progress(placement),
                    protocol=args.cpu_only,
                )
            )
        except TraceError as exc:
            raise UserError(str(exc)) from None
    if args.assignments is not None:
        args.assignments.write_text(assignments_csv(results[0].assignments), encoding="utf-8")
    if pyplot is not None:
        plot_results(results, args.plot, pyplot, trace=trace)
    if args.json:
        print(json.dumps({"modes": [result_json(r) for r in results]}, indent=2))
    else:
        print(results_table(results))
    return 0
