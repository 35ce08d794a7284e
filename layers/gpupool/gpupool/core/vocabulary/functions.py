"""The three functions, named once: launch, bind, compact.

Role: `FunctionName` and `FUNCTIONS` (in that order), read by the relay's event types
(`vocabulary.events`: which function acts on each), the intake's routing, the handlers and the CLI.

Must not: import anything but the standard library, or say which causes a function acts on
(`intake.routing` does).
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["FUNCTIONS", "FunctionName"]

FunctionName = Literal["launch", "bind", "compact"]
FUNCTIONS: tuple[FunctionName, ...] = get_args(FunctionName)
