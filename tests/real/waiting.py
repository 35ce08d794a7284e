"""The real tier's one polling helper: ask `probe` until it answers something truthy, or fail naming
what was awaited. Each caller module binds the timeout and interval its components need."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, probe: Callable[[], Any], *, timeout: float = 120.0, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
