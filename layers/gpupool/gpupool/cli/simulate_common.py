"""What both `gpupool simulate` subcommands share: their flags' number types and matplotlib.

Role: argparse types that refuse a bad number with one clear line (`positive_float`,
`non_negative_float`, `share`) and `load_pyplot`, which imports matplotlib (headless) only when
a plot is asked for.

Must not: import a simulation (registration stays cheap: `gpupool --help` answers at once).
"""

from __future__ import annotations

import argparse
from typing import Any

from gpupool.cli.errors import UserError

__all__ = ["load_pyplot", "non_negative_float", "positive_float", "share"]


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive finite number")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a non-negative finite number")
    return value


def share(text: str) -> float:
    value = non_negative_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def load_pyplot() -> Any:
    """matplotlib's pyplot (headless), imported only when a plot is asked for."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install 'gpupool[plot]'") from None
    return matplotlib.pyplot
