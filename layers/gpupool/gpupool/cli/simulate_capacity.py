"""`gpupool simulate capacity`: its flags, the simulation run, the table / JSON, the plot.

Role: the `capacity` subcommand of `gpupool simulate` — `register(sub)` adds it and its flags;
`run(args)` is the I/O around `gpupool.simulation.capacity`: every argument checked before any
work (bad input: one clear line, exit 2, nothing written), the demand read (a trace file, or
the openb-shaped sample the package ships), a progress bar on stderr when it is a terminal, a
table (or `--json`: `{"spot", "policies": [...]}`) on stdout — On-Demand cost, the 'at Spot'
column only from `--spot-discount` or a quoted Spot table, each gpupool policy's cost and idle
beyond min and warm against TensorFusion's — and `--plot` (matplotlib, one panel
each: GPUs asked and bought, the cost so far with each policy's total and their ratio, and the
pods waiting for capacity, over simulated hours). The simulation is imported only when it runs.

Must not: simulate or decide anything (gpupool.simulation.capacity does).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpupool.cli.errors import UserError
from gpupool.cli.simulate_common import load_pyplot, non_negative_float, positive_float, share
from gpupool.core.catalog import CLOUDS

if TYPE_CHECKING:
    from gpupool.simulation.capacity.ledger import PolicyReport
    from gpupool.simulation.capacity.run import CapacityRun

__all__ = ["EPILOG", "HELP", "plot_reports", "register", "reports_table", "run"]

HELP = (
    "replay days of GPU demand through gpupool's real launch/bind/compact services and "
    "TensorFusion's replayed rules on the same seeded world; compare cost and time to capacity"
)
EPILOG = """\
The world (identical for every policy with one --seed): instances boot in 60-180 s and join
30-90 s later; a share of Spot launches is interrupted (2-minute notice); each offering is out
of capacity for whole hours with some probability. The pool: min 2, warm 4 T4 worth of
TFLOPS/VRAM, g4dn/g5/g6 (aws) or gn6i/gn7i/gn6v (alibaba), On-Demand (--spot: and Spot).
Policies: gpupool, tensorfusion, and gpupool+consolidation (nodeCompaction.policy
WhenUnderutilized). 'beyond' is the idle GPU-hours beyond what min and warm require; 'at Spot'
prices the run at --spot-discount (the catalog's Spot prices are estimates, never used for it).
--mode karpenter: gpupool's pool makes Karpenter NodeClaims; a simulated Karpenter launches
them in the same world (same boot/join times, interruptions and capacity failures).
Trace format: CSV `name,arrival,departure,gpus` (seconds from the start; 0.5 = half a GPU) or
JSONL with those keys; openb's pod list is detected and rescaled onto the window.
Without --trace: the openb-shaped sample the package ships (815 pods, generated from openb's
published mix; gpupool/simulation/traces). The full trace: openb_pod_list_default.csv from
github.com/alibaba/clusterdata (cluster-trace-gpu-v2023/csv), e.g.
  gpupool simulate capacity --trace clusterdata/cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv
See docs/simulation.md for the rules and the figures.
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    capacity = sub.add_parser(
        "capacity",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    capacity.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="demand trace (CSV/JSONL, or openb's pod list, rescaled onto the window); default: the "
        "openb-shaped sample the package ships (see below for the full openb trace)",
    )
    capacity.add_argument(
        "--days", type=positive_float, default=2.0, metavar="N", help="simulated days (default 2)"
    )
    capacity.add_argument("--cloud", choices=CLOUDS, default="aws", help="catalog and region (default aws)")
    capacity.add_argument(
        "--policy",
        action="append",
        choices=("gpupool", "tensorfusion", "gpupool+consolidation"),
        help="policy to run (repeatable; default all three)",
    )
    capacity.add_argument(
        "--mode",
        choices=("provisioned", "karpenter"),
        default="provisioned",
        help="gpupool's provisioningMode: launch instances itself, or NodeClaims for Karpenter "
        "(default provisioned); TensorFusion's side is unchanged",
    )
    capacity.add_argument("--seed", type=int, default=0, metavar="N", help="seeds the world (default 0)")
    capacity.add_argument(
        "--budget-per-day",
        type=non_negative_float,
        metavar="USD",
        help="the pool's nodeProvisioner.budget.budgetPerDay (month and quarter follow it); "
        "gpupool enforces it at launch, TensorFusion only reads it",
    )
    capacity.add_argument(
        "--spot-interruption-share",
        type=share,
        default=0.2,
        metavar="SHARE",
        help="share of Spot launches interrupted (0-1, default 0.2)",
    )
    capacity.add_argument(
        "--capacity-failure-share",
        type=share,
        default=0.05,
        metavar="SHARE",
        help="chance an offering is out of capacity for a given hour (0-1, default 0.05)",
    )
    capacity.add_argument(
        "--on-demand-only",
        action="store_true",
        help="the pool allows OnDemand offerings only: the default, kept for older command lines",
    )
    capacity.add_argument(
        "--spot",
        action="store_true",
        help="gpupool's pools may launch Spot too, priced from a quoted Spot source or --spot-discount "
        "(default: On-Demand only, the headline)",
    )
    capacity.add_argument(
        "--spot-discount",
        type=share,
        metavar="SHARE",
        help="Spot's discount off On-Demand (0-1, e.g. 0.6): prices the 'at Spot' column and --spot's "
        "Spot offerings when the catalog has no quoted Spot prices (its Spot tables are estimates)",
    )
    capacity.add_argument("--json", action="store_true", help='print {"policies": [...]} instead of a table')
    capacity.add_argument(
        "--plot",
        type=Path,
        metavar="OUT.png",
        help="PNG comparing the policies over time: GPUs bought against demand, cost so far, pods "
        "waiting for capacity (matplotlib)",
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def reports_table(reports: Sequence[PolicyReport], *, spot_costs: dict[str, float] | None = None) -> str:
    """One row per policy: the figures the issue asks for, then what refused or violated.
    `spot_costs`: the 'at Spot' column, per policy that could run on Spot ("-" for the others)."""
    spot = spot_costs or {}
    header = (
        f"{'policy':<22}{'cost $':>10}{'at Spot $':>10}{'GPU-h bought':>13}{'used':>8}{'idle':>8}"
        f"{'beyond':>8}{'TTC p50 s':>10}{'p95 s':>7}{'max s':>7}{'pods':>6}{'unserved':>9}"
        f"{'launch':>7}{'fail':>6}{'term':>6}{'compact':>8}{'drain':>6}{'moved':>6}{'intr':>5}"
        f"{'violations':>11}"
    )
    lines = [header, "-" * len(header)]
    for r in reports:
        c = r.counters
        lines.append(
            f"{r.policy:<22}{r.cost:>10,.2f}{_money(spot.get(r.policy)):>10}{r.gpu_hours_bought:>13,.1f}"
            f"{r.gpu_hours_used:>8,.1f}{r.idle_gpu_hours:>8,.1f}{r.idle_beyond_reserve:>8,.1f}"
            f"{_seconds(r.ttc_p50):>10}{_seconds(r.ttc_p95):>7}{_seconds(r.ttc_max):>7}{r.pods:>6}"
            f"{r.unserved:>9}{c.get('launches', 0):>7}{c.get('launch_failures', 0):>6}"
            f"{c.get('terminations', 0):>6}{c.get('compactions', 0):>8}{c.get('drains', 0):>6}"
            f"{c.get('pods_moved', 0):>6}{c.get('interruptions_handled', 0):>5}"
            f"{sum(r.violations.values()):>11}"
        )
    for r in reports:
        bad = {k: v for k, v in r.violations.items() if v}
        if bad:
            lines.append(f"{r.policy}: violations {', '.join(f'{k} {v}' for k, v in bad.items())}")
        if r.budget_refusals:
            lines.append(f"{r.policy}: {r.budget_refusals} launch(es) cut by the budget, e.g.:")
            lines.extend(f"  {reason}" for reason in r.budget_reasons[:3])
    return "\n".join(lines)


_COLOURS = {"gpupool": "tab:blue", "tensorfusion": "tab:orange", "gpupool+consolidation": "tab:green"}


def cost_ratio(reports: Sequence[PolicyReport], policy: str = "gpupool") -> str:
    """`gpupool $104 vs tensorfusion $293: 0.35 ×` when both ran (else "")."""
    costs = {r.policy: r.cost for r in reports}
    if policy not in costs or not costs.get("tensorfusion"):
        return ""
    ratio = costs[policy] / costs["tensorfusion"]
    return f"{policy} ${costs[policy]:,.2f} vs tensorfusion ${costs['tensorfusion']:,.2f}: {ratio:.2f} ×"


def idle_ratio(reports: Sequence[PolicyReport], policy: str) -> str:
    """The idle GPU-hours beyond min and warm of `policy` against TensorFusion's (else "")."""
    idle = {r.policy: r.idle_beyond_reserve for r in reports}
    if policy not in idle or "tensorfusion" not in idle:
        return ""
    base = idle["tensorfusion"]
    ratio = f"{idle[policy] / base:.2f} ×" if base else "-"
    return f"{policy} {idle[policy]:,.1f} vs tensorfusion {base:,.1f}: {ratio}"


def comparison_lines(reports: Sequence[PolicyReport]) -> list[str]:
    """The lines under the table: cost and idle beyond min and warm, each gpupool policy against
    TensorFusion's."""
    lines = []
    for policy in ("gpupool", "gpupool+consolidation"):
        if cost := cost_ratio(reports, policy):
            lines.append(f"cost: {cost}")
    for policy in ("gpupool", "gpupool+consolidation"):
        if idle := idle_ratio(reports, policy):
            lines.append(f"idle GPU-h beyond min and warm: {idle}")
    return lines


def floor_line(reports: Sequence[PolicyReport], cheapest: tuple[str, Decimal]) -> str:
    """What no policy that holds min and warm every minute in whole GPUs can go under, on what
    gpupool's pods used, against TensorFusion's figures (else ""): the GPU-hours, the idle beyond
    min and warm among them, and their cost at the pool's cheapest On-Demand price per GPU."""
    rows = {r.policy: r for r in reports}
    base, ours = rows.get("tensorfusion"), rows.get("gpupool") or rows.get("gpupool+consolidation")
    if base is None or ours is None:
        return ""
    name, per_gpu = cheapest
    cost = ours.floor_gpu_hours * float(per_gpu)
    idle = (
        f"{ours.floor_beyond_reserve / base.idle_beyond_reserve:.2f} ×" if base.idle_beyond_reserve else "-"
    )
    price = f"{cost / base.cost:.2f} ×" if base.cost else "-"
    return (
        f"floor (whole GPUs for what {ours.policy}'s pods used plus min and warm, every minute): "
        f"{ours.floor_gpu_hours:,.1f} GPU-h, {ours.floor_beyond_reserve:,.1f} beyond min and warm "
        f"({idle} tensorfusion's); ${cost:,.2f} at {name}'s ${per_gpu:.3f} per GPU-h ({price} tensorfusion's)"
    )


def plot_reports(reports: Sequence[PolicyReport], path: Path, pyplot: Any, *, title: str) -> None:
    """Three panels over simulated hours, one line per policy: GPUs bought against the demand,
    the cost so far (each total in the legend, their ratio in the panel's title), and the pods
    waiting for capacity (what is unserved at that minute)."""
    figure, (gpus, cost, waiting) = pyplot.subplots(
        3, 1, figsize=(9, 8.5), sharex=True, gridspec_kw={"height_ratios": [3, 2, 1.4]}
    )

    def text(line: str) -> str:  # matplotlib reads $…$ as mathematics
        return line.replace("$", r"\$")

    demand = reports[0].samples
    hours = [s.hours for s in demand]
    gpus.fill_between(hours, [s.demand_gpus for s in demand], color="0.85", label="demand (GPUs asked)")
    for r, style in zip(reports, ("-", "--", ":"), strict=False):
        colour = _COLOURS.get(r.policy)
        at = [s.hours for s in r.samples]
        gpus.step(
            at,
            [s.capacity_gpus for s in r.samples],
            where="post",
            color=colour,
            linestyle=style,
            label=r.policy,
        )
        cost.plot(
            at,
            [s.cost for s in r.samples],
            color=colour,
            linewidth=1.6,
            label=text(f"{r.policy}: ${r.cost:,.0f}"),
        )
        waiting.step(
            at,
            [s.waiting_pods for s in r.samples],
            where="post",
            color=colour,
            linestyle=style,
            linewidth=1,
            label=f"{r.policy}: {r.unserved} of {r.pods} never served",
        )
    gpus.set_title("GPUs bought by each policy against the demand", fontsize=9)
    gpus.set_ylabel("GPUs")
    gpus.legend(loc="upper left", fontsize=8)
    ratio = cost_ratio(reports)
    cost.set_title(text("cost so far" + (f" — {ratio}" if ratio else "")), fontsize=9)
    cost.set_ylabel("USD")
    cost.legend(loc="upper left", fontsize=8)
    waiting.set_title("pods waiting for capacity (unserved at that minute)", fontsize=9)
    waiting.set_ylabel("pods")
    waiting.set_xlabel("simulated hours")
    waiting.legend(loc="upper left", fontsize=8)
    figure.suptitle(text(title), fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def _round2(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _progress_bar() -> Callable[[str, float], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(policy: str, done: float) -> None:
        filled = int(done * 30)
        end = "\n" if done >= 1 else ""
        print(f"\r{policy:<13} [{'#' * filled}{'.' * (30 - filled)}] {done:4.0%}", end=end, file=sys.stderr)

    return show


def _build_run(args: argparse.Namespace) -> CapacityRun:
    from gpupool.simulation.capacity.pool_spec import PoolSpec
    from gpupool.simulation.capacity.run import CapacityRun
    from gpupool.simulation.cluster.fates import FatesConfig

    try:
        fates = FatesConfig(
            seed=args.seed,
            spot_interruption_share=args.spot_interruption_share,
            capacity_failure_share=args.capacity_failure_share,
        )
        budget = None if args.budget_per_day is None else Decimal(str(args.budget_per_day))
        if args.spot and args.on_demand_only:
            raise ValueError("--spot and --on-demand-only contradict each other: give one")
        capacity_types = ("OnDemand", "Spot") if args.spot else ("OnDemand",)
        discount = None if args.spot_discount is None else Decimal(str(args.spot_discount))
        pool = PoolSpec(
            cloud=args.cloud,
            budget_per_day=budget,
            capacity_types=capacity_types,
            mode=args.mode,
            spot_discount=discount,
        )
        policies = tuple(dict.fromkeys(args.policy or ("gpupool", "tensorfusion", "gpupool+consolidation")))
        return CapacityRun(days=args.days, policies=policies, fates=fates, pool=pool)
    except ValueError as error:
        raise UserError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    from gpupool.simulation.capacity.run import load_demand, simulate
    from gpupool.simulation.openb import TraceError

    if args.plot is not None and not args.plot.parent.is_dir():
        raise UserError(f"--plot {args.plot}: folder {args.plot.parent} does not exist")
    job = _build_run(args)
    pyplot = load_pyplot() if args.plot is not None else None
    try:
        demands = load_demand(args.trace, window_seconds=job.window_seconds)
    except TraceError as error:
        raise UserError(str(error)) from None
    from gpupool.simulation.capacity.pool_spec import cheapest_per_gpu, spot_pricing

    try:
        spot = spot_pricing(job.pool)
    except ValueError as error:
        raise UserError(str(error)) from None
    reports = simulate(job, demands, progress=_progress_bar())
    # TensorFusion's providers launch On-Demand only (docs/simulation.md): no 'at Spot' for it.
    at_spot = (
        {r.policy: r.cost * float(1 - spot.discount) for r in reports if r.policy != "tensorfusion"}
        if spot.discount is not None and not args.spot
        else {}
    )
    trace = (
        str(args.trace) if args.trace is not None else "the shipped openb-shaped sample (--trace for openb's)"
    )
    if args.json:
        rows = [{**r.to_json(), "atSpotCost": _round2(at_spot.get(r.policy))} for r in reports]
        print(json.dumps({"policies": rows, "spot": spot.describe()}, indent=2))
    else:
        print(
            f"{len(demands)} pods over {job.days:g} simulated day(s), {job.pool.cloud} "
            f"{job.pool.region}, seed {job.fates.seed}"
            + (f", budgetPerDay ${job.pool.budget_per_day}" if job.pool.budget_per_day is not None else "")
            + (f", Spot allowed ({spot.describe()})" if args.spot else ", On-Demand prices")
            + (", gpupool in Karpenter mode" if job.pool.mode == "karpenter" else "")
            + f"; trace {trace}"
        )
        print(reports_table(reports, spot_costs=at_spot))
        for line in comparison_lines(reports):
            print(line)
        if not args.spot and (floor := floor_line(reports, cheapest_per_gpu(job.pool))):
            print(floor)
        if not args.spot:
            print(f"at Spot: {spot.describe()}" + ("" if at_spot else "; no column without one"))
    if pyplot is not None and args.plot is not None:
        mode = ", gpupool in Karpenter mode" if job.pool.mode == "karpenter" else ""
        trace = args.trace.name if args.trace is not None else "the shipped openb-shaped sample"
        compared = " vs ".join(r.policy for r in reports)
        title = (
            f"{compared} on one seeded world\n{len(demands)} pods of {trace} over {job.days:g} day(s), "
            f"{job.pool.cloud} {job.pool.region}, seed {job.fates.seed}{mode}"
        )
        plot_reports(reports, args.plot, pyplot, title=title)
    return 0
