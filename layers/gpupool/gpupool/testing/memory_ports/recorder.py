"""The call recorder the in-memory ports share, and the simulated clock.

Role: `MemoryClock` (a `Clock` port that moves only when told) and `CallRecorder`, the base of
`MemoryCompute` and `MemoryCluster`: one re-entrant lock, a log and count of every call, and
injected errors before (`fail_next`) or after (`crash_after`) any method. `Crash` is a simulated
function death between two steps (a BaseException, so no domain-error handler catches it).

Must not: know about any port's methods (the ports pass their work in).
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

__all__ = ["START", "CallRecorder", "Crash", "MemoryClock"]

T = TypeVar("T")
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Crash(BaseException):
    """A simulated function death between two steps (not a domain error: nothing catches it)."""


class MemoryClock:
    """A clock that moves only when told (`advance`, or `set` for a simulation's event times)."""

    def __init__(self, now: datetime = START) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        self._now += delta

    def set(self, moment: datetime) -> None:
        """Move to `moment` (never backwards: a simulation's events come in time order)."""
        if moment < self._now:
            raise ValueError(f"the clock cannot go back from {self._now} to {moment}")
        self._now = moment


class CallRecorder:
    """Call log and injected errors shared by both fakes."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        # A days-long simulation turns the log off (it would only grow); counts stay exact.
        self.keep_calls = True
        self.call_counts: Counter[str] = Counter()
        self._before: dict[str, deque[BaseException]] = defaultdict(deque)
        self._after: dict[str, deque[BaseException]] = defaultdict(deque)

    def fail_next(self, method: str, error: BaseException) -> None:
        """The next call of `method` raises `error` without doing anything."""
        self._before[method].append(error)

    def crash_after(self, method: str, error: BaseException | None = None) -> None:
        """The next call of `method` does its work, then raises (default: Crash)."""
        self._after[method].append(error or Crash(f"crash after {method}"))

    def count(self, method: str) -> int:
        return self.call_counts[method]

    def _call(self, method: str, args: tuple[Any, ...], work: Callable[[], T]) -> T:
        with self.lock:
            self.call_counts[method] += 1
            if self.keep_calls:
                self.calls.append((method, args))
            if self._before[method]:
                raise self._before[method].popleft()
            result = work()
            if self._after[method]:
                raise self._after[method].popleft()
            return result
