"""Reading the files users name on the command line: one clear line for each way it can fail.

Must not: parse what it reads (each command knows its own format).
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpupool.cli.errors import UserError


def read_text(path: Path, *, what: str = "", allow_stdin: bool = False) -> str:
    """The UTF-8 text of `path` (`-` is standard input when `allow_stdin`), or a UserError that
    names the file, what it was meant to be (`what`, e.g. "the env file") and why it can't be read."""
    if allow_stdin and str(path) == "-":
        return sys.stdin.read()
    label = f"{path}: {what}: " if what else f"{path}: "
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{label}no such file") from None
    except IsADirectoryError:
        raise UserError(f"{label}is a directory") from None
    except UnicodeDecodeError:
        raise UserError(f"{label}not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"{label}cannot read: {exc.strerror or exc}") from None
