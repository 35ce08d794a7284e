"""`gpupool simulate placement`: its flags, the trace files read, each mode run, the outputs.

Role: the `placement` subcommand of `gpupool simulate` — `register(sub)` adds it and its flags;
`run(args)` is the I/O around `gpupool.simulation.placement`: read the two CSV files as they are
(parsed by `gpupool.simulation.openb`), check every argument before any work (bad input: one
clear line, exit 2, nothing written), show a progress bar on a terminal, print a table or JSON,
write `--assignments` and `--plot`. The simulation is imported only when it runs.

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
PLACEMENTS = (
    "RandomFit",
    "BestFit",
    "DotProduct",
    "FGD",
    "CompactFirst",
    "LowLoadFirst",
    "NodeCompactGPULowLoad",
    "FragmentationAware",
    "BalancedFit",
)
# `gpupool.simulation.placement.PROTOCOLS`: who places CPU-only tasks.
PROTOCOLS = ("rule", "least-allocated")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    placement = sub.add_parser("placement", help=HELP, description=HELP)
    placement.add_argument("--nodes", type=Path, required=True, metavar="NODES.csv", help="openb node list")
    placement.add_argument("--pods", type=Path, required=True, metavar="PODS.csv", help="openb pod list")
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
        "--plot", type=Path, metavar="OUT.png", help="PNG of GPU allocated vs. arrived (needs matplotlib)"
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


def plot_results(results: Sequence[ModeResult], path: Path, pyplot: Any) -> None:
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for r in results:
        axes.plot([c[0] for c in r.curve], [c[1] for c in r.curve], label=r.placement, linewidth=1.2)
    total = results[0].gpus_total
    axes.axhline(total, color="grey", linestyle=":", linewidth=0.8, label=f"GPUs ({total})")
    axes.set_xlabel("GPU requested by arrived tasks")
    axes.set_ylabel("GPU allocated")
    axes.set_title("Allocated GPUs as the workload arrives")
    axes.legend(fontsize=8)
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
    pyplot = load_pyplot() if args.plot is not None else None
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
        plot_results(results, args.plot, pyplot)
    if args.json:
        print(json.dumps({"modes": [result_json(r) for r in results]}, indent=2))
    else:
        print(results_table(results))
    return 0
