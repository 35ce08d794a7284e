"""Entry point of the `gpupool` command: builds the parser from `gpupool.cli.commands`.

Each module in `gpupool.cli.commands` defines `NAME`, `HELP`, `register(parser)` and
`run(args) -> int`. Registration must stay cheap (no SDK imports): heavy imports belong in
`run`, so `gpupool --help` answers instantly. A reader that goes away (`gpupool demo | head`)
ends the command quietly with exit 141 (128 + SIGPIPE, as a shell reports a writer a closed
pipe stopped), never with a traceback. A mistyped flag is one line naming the command it was
given to and the closest flag that command has ("did you mean"), exit 2; a module a partial
install lacks is one line naming the extra that brings it (`gpupool.cli.extras`), exit 1.

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


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _command_parser(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[str, argparse.ArgumentParser]:
    """The deepest (sub)command `argv` names and its parser: `gpupool sandbox build` → its own."""
    words, path = list(argv), ["gpupool"]
    while True:
        choices = _subparsers(parser)
        nxt = next((w for w in words if not w.startswith("-")), None)
        if nxt is None or nxt not in choices:
            return " ".join(path), parser
        words = words[words.index(nxt) + 1 :]
        path.append(nxt)
        parser = choices[nxt]


def _unrecognized(parser: argparse.ArgumentParser, argv: Sequence[str], extras: list[str]) -> str:
    """One line for arguments no parser took, with the closest flag of the command they went to."""
    import difflib

    where, command = _command_parser(parser, argv)
    flags = [option for action in command._actions for option in action.option_strings]
    first = extras[0]
    line = f"{where}: error: unrecognized argument{'s' if len(extras) > 1 else ''} {' '.join(extras)}"
    if first.startswith("-"):
        close = difflib.get_close_matches(first.split("=", 1)[0], flags, n=1, cutoff=0.6)
        if close:
            return f"{line}; did you mean {close[0]}?"
    return f"{line} (see {where} --help)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    args, extras = parser.parse_known_args(arguments)
    if extras:
        print(_unrecognized(parser, arguments, extras), file=sys.stderr)
        return 2
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    try:
        return int(run(args))
    except UserError as exc:
        print(f"gpupool {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        from gpupool.cli.extras import missing_module_message

        message = missing_module_message(exc)
        if message is None:
            raise
        print(f"gpupool {args.command}: error: {message}", file=sys.stderr)
        return 1
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
