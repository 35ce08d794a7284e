"""`gpupool simulate placement ...`: replay a GPU-sharing trace through the allocator, per mode.

Role: the `simulate` command and its subcommands. `placement` replays the openb trace formats
(see docs/placement.md); later subcommands (capacity) register here beside it.

Must not: hold simulation logic (`gpupool.core.placement_sim`) or file handling beyond argument
checks (`gpupool.cli.simulate_placement`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "simulate"
HELP = "replay workloads offline to compare placement modes (no cluster needed)"

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


def run(args: argparse.Namespace) -> int:
    from gpupool.cli.errors import UserError

    if getattr(args, "_simulation", None) == "placement":
        from gpupool.cli.simulate_placement import simulate_placement

        return simulate_placement(args)
    raise UserError("say which simulation: gpupool simulate placement --help")
