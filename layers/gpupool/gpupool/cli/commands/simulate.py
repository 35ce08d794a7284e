"""`gpupool simulate placement ...`: replay a GPU-sharing trace through the allocator, per mode.

Role: the `simulate` command and its subcommands. `placement` replays the openb trace formats
(see docs/placement.md); `capacity` replays days of demand through gpupool's services and
TensorFusion's rules (see docs/simulation.md).

Must not: hold simulation logic (`gpupool.simulation.placement`, `gpupool.simulation.capacity`) or file
handling beyond argument checks (`gpupool.cli.simulate_placement`, `gpupool.cli.simulate_capacity`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "simulate"
HELP = "replay workloads offline: placement modes, or days of elastic capacity (no cluster needed)"

PLACEMENT_HELP = "replay an openb-format trace (nodes, pods) through every placement mode and compare"
PLACEMENTS = (
    "RandomFit",
    "BestFit",
    "CompactFirst",
    "LowLoadFirst",
    "NodeCompactGPULowLoad",
    "FragmentationAware",
)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive finite number")
    return value


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="simulation", metavar="SIMULATION")
    placement = sub.add_parser("placement", help=PLACEMENT_HELP, description=PLACEMENT_HELP)
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
        type=_positive_float,
        default=1.3,
        metavar="X",
        help="repeat the pod list until GPU requested reaches this times the cluster's GPUs (default 1.3)",
    )
    placement.add_argument(
        "--seed", type=int, default=0, metavar="N", help="breaks exact score ties; seeds Random-fit"
    )
    placement.add_argument(
        "--assignments", type=Path, metavar="OUT.csv", help="write pod,node,gpus (needs one --placement)"
    )
    placement.add_argument("--json", action="store_true", help="print JSON instead of a table")
    placement.add_argument(
        "--plot", type=Path, metavar="OUT.png", help="PNG of GPU allocated vs. arrived (needs matplotlib)"
    )
    placement.set_defaults(_simulation="placement")
    _register_capacity(sub)


CAPACITY_HELP = (
    "replay days of GPU demand through gpupool's real launch/bind/compact services and "
    "TensorFusion's replayed rules on the same seeded world; compare cost and time to capacity"
)
CAPACITY_EPILOG = """\
The world (identical for every policy with one --seed): instances boot in 60-180 s and join
30-90 s later; a share of Spot launches is interrupted (2-minute notice); each offering is out
of capacity for whole hours with some probability. The pool: min 2, warm 4 T4 worth of
TFLOPS/VRAM, g4dn/g5/g6 (aws) or gn6i/gn7i/gn6v (alibaba), OnDemand and Spot.
--mode karpenter: gpupool's pool makes Karpenter NodeClaims; a simulated Karpenter launches
them in the same world (same boot/join times, interruptions and capacity failures).
Trace format: CSV `name,arrival,departure,gpus` (seconds from the start; 0.5 = half a GPU) or
JSONL with those keys; openb's pod list is detected and rescaled onto the window.
See docs/simulation.md for the rules and the figures.
"""


def _share(text: str) -> float:
    value = _positive_or_zero(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def _positive_or_zero(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a non-negative finite number")
    return value


def _register_capacity(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    capacity = sub.add_parser(
        "capacity",
        help=CAPACITY_HELP,
        description=CAPACITY_HELP,
        epilog=CAPACITY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    capacity.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="demand trace (CSV/JSONL, or openb's pod list); default: "
        "../shared/data/openb/openb_pod_list_default.csv rescaled onto the window",
    )
    capacity.add_argument(
        "--days", type=_positive_float, default=2.0, metavar="N", help="simulated days (default 2)"
    )
    capacity.add_argument(
        "--cloud", choices=("aws", "alibaba"), default="aws", help="catalog and region (default aws)"
    )
    capacity.add_argument(
        "--policy",
        action="append",
        choices=("gpupool", "tensorfusion"),
        help="policy to run (repeatable; default both)",
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
        type=_positive_or_zero,
        metavar="USD",
        help="the pool's nodeProvisioner.budget.budgetPerDay (month and quarter follow it); "
        "gpupool enforces it at launch, TensorFusion only reads it",
    )
    capacity.add_argument(
        "--spot-interruption-share",
        type=_share,
        default=0.2,
        metavar="SHARE",
        help="share of Spot launches interrupted (0-1, default 0.2)",
    )
    capacity.add_argument(
        "--capacity-failure-share",
        type=_share,
        default=0.05,
        metavar="SHARE",
        help="chance an offering is out of capacity for a given hour (0-1, default 0.05)",
    )
    capacity.add_argument(
        "--on-demand-only",
        action="store_true",
        help="the pool allows OnDemand offerings only (default: OnDemand and Spot)",
    )
    capacity.add_argument("--json", action="store_true", help='print {"policies": [...]} instead of a table')
    capacity.add_argument(
        "--plot", type=Path, metavar="OUT.png", help="PNG of demand, capacity and cost over time (matplotlib)"
    )
    capacity.set_defaults(_simulation="capacity")


def run(args: argparse.Namespace) -> int:
    from gpupool.cli.errors import UserError

    if getattr(args, "_simulation", None) == "placement":
        from gpupool.cli.simulate_placement import simulate_placement

        return simulate_placement(args)
    if getattr(args, "_simulation", None) == "capacity":
        from gpupool.cli.simulate_capacity import simulate_capacity

        return simulate_capacity(args)
    raise UserError(
        "say which simulation: gpupool simulate placement --help, gpupool simulate capacity --help"
    )
