"""The sandbox's env file (`gpupool sandbox up` writes it; `invoke` and `demo` read it).

Role: `read_env_file(path)` — its `KEY=VALUE` lines as a mapping, or a UserError naming the file
and line (or saying how to make the file).

Must not: apply what it reads to the process environment (callers pass the mapping on).
"""

from __future__ import annotations

from pathlib import Path

from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text

__all__ = ["read_env_file"]


def read_env_file(path: Path) -> dict[str, str]:
    """`KEY=VALUE` lines (optionally `export KEY=VALUE`, values optionally quoted; # comments)."""
    if not path.exists():
        raise UserError(
            f"{path}: the env file: no such file; run `gpupool sandbox up --background` first "
            "(it writes .gpupool/sandbox/env; --dir D writes D/env)"
        )
    lines = read_text(path, what="the env file").splitlines()
    values: dict[str, str] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if not sep or not key.strip().replace("_", "").isalnum():
            raise UserError(f"{path}:{number}: expected KEY=VALUE, got {raw.strip()!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values
