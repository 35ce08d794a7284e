"""Clocks for the embedded API server: wall time, or a manual clock a simulation advances.

The server stamps `creationTimestamp` and `deletionTimestamp` from its clock. A test or a
simulation passes `ManualClock` and moves time with `advance()`; watch and request timeouts
always use wall time, so a frozen clock never hangs a client.

`Clock` is the service's port (`gpupool.service.ports.Clock`): one concept, one definition.

Must not: sleep, or be used for anything but timestamps written into objects.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from gpupool.service.ports import Clock

__all__ = ["Clock", "ManualClock", "SystemClock", "rfc3339"]


class SystemClock:
    """Wall-clock time in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to; safe to use from several threads."""

    def __init__(self, start: datetime | None = None) -> None:
        initial = start or datetime(2026, 1, 1, tzinfo=UTC)
        if initial.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._now = initial.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        if seconds < 0:
            raise ValueError("a clock does not move backwards")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, moment: datetime) -> None:
        if moment.tzinfo is None:
            raise ValueError("ManualClock.set needs a timezone-aware time")
        with self._lock:
            if moment < self._now:
                raise ValueError("a clock does not move backwards")
            self._now = moment.astimezone(UTC)


def rfc3339(moment: datetime) -> str:
    """Kubernetes' timestamp form: second precision, `Z` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
