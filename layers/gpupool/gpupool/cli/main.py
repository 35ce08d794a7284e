"""Entry point of the `gpupool` command: builds the parser from `gpupool.cli.commands`.

Each module in `gpupool.cli.commands` defines `NAME`, `HELP`, `register(parser)` and
`run(args) -> int`. Registration must stay cheap (no SDK imports): heavy imports belong in
`run`, so `gpupool --help` answers instantly. A reader that goes away (`gpupool demo | head`)
ends the command quietly with exit 141 (128 + SIGPIPE, as a shell reports a writer a closed
pipe stopped), never with a traceback.

Must not: hold any decision logic — subcommands call the core, the service or `gpupool.sandbox`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from gpupool.cli import commands
from gpupool.cli.errors import UserError


def _command_modules() -> list[ModuleType]:
    found = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    ]
    return sorted(found, key=lambda module: str(module.NAME))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpupool",
        description="Elastic GPU node pools for Kubernetes in your own cloud (tensor-fusion.ai/v1).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.register(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    try:
        return int(run(args))
    except UserError as exc:
        print(f"gpupool {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 141


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so what is still buffered for the closed pipe is not flushed
    into it again at exit (which Python would report as a second BrokenPipeError)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured): nothing left to flush
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
