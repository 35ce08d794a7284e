"""What the install guides' tool doubles share (tests/e2e/install_doubles.py): the JSON state file
($GPUPOOL_DOUBLES_STATE) that lets a later call see what an earlier one made, the refusal a real
tool prints before exiting non-zero, and flag parsing.

Must not: reach a network beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "install"


class Refused(Exception):
    """What the real tool would print before exiting non-zero."""


# ---- shared state ------------------------------------------------------------------------------
def state_path() -> Path:
    return Path(os.environ["GPUPOOL_DOUBLES_STATE"])


def load_state() -> dict[str, Any]:
    path = state_path()
    return json.loads(path.read_text()) if path.exists() else {}


def save_state(state: dict[str, Any]) -> None:
    state_path().write_text(json.dumps(state, indent=1, sort_keys=True))


def record(state: dict[str, Any], tool: str, argv: list[str]) -> None:
    state.setdefault("calls", []).append([tool, *argv])


def flags_of(
    argv: list[str], *, repeated: tuple[str, ...] = (), boolean: tuple[str, ...] = ()
) -> tuple[dict[str, Any], list[str]]:
    """--flag value / --flag=value / boolean flags → ({flag: value or [values]}, positionals)."""
    found: dict[str, Any] = {}
    positional: list[str] = []
    words = list(argv)
    while words:
        word = words.pop(0)
        if not word.startswith("-") or word == "-":
            positional.append(word)
            continue
        name, eq, value = word.partition("=")
        if name in boolean:
            found[name] = True
            continue
        if not eq:
            if not words:
                raise Refused(f"flag needs an argument: {name}")
            value = words.pop(0)
        if name in repeated:
            found.setdefault(name, []).append(value)
        else:
            found[name] = value
    return found, positional
