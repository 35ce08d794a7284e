"""`gpupool simulate placement|capacity`: replay workloads offline (no cluster needed).

Role: the `simulate` command: its two subcommands, each registered and run by its own module —
`placement` (`gpupool.cli.simulate_placement`: an openb trace through every placement mode, see
docs/placement.md) and `capacity` (`gpupool.cli.simulate_capacity`: days of demand through
gpupool's services and TensorFusion's rules, see docs/simulation.md).

Must not: hold a subcommand's flags or output, or any simulation logic.
"""

from __future__ import annotations

import argparse

from gpupool.cli import simulate_capacity, simulate_placement

NAME = "simulate"
HELP = "replay workloads offline: placement modes, or days of elastic capacity (no cluster needed)"
_SUBCOMMANDS = {"placement": simulate_placement, "capacity": simulate_capacity}


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="simulation", metavar="SIMULATION")
    for name, module in _SUBCOMMANDS.items():
        module.register(sub)
        sub.choices[name].set_defaults(_simulation=name)


def run(args: argparse.Namespace) -> int:
    from gpupool.cli.errors import UserError

    module = _SUBCOMMANDS.get(getattr(args, "_simulation", None) or "")
    if module is None:
        raise UserError(
            "say which simulation: gpupool simulate placement --help, gpupool simulate capacity --help"
        )
    return int(module.run(args))
