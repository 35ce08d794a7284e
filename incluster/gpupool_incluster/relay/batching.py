"""Batching windows: many pod events for one pool become one delivery.

Role: `Batcher` keeps one window per (function, type, pool): it opens with the first event,
closes `idle` seconds after the last one or `max_window` seconds after it opened, whichever comes
first (Karpenter's batch numbers: 1 s idle, 10 s max), and then yields the newest event of the
window, carrying how many it stands for. Events of types that are never coalesced (nodes,
claims) pass straight through.

Must not: read the clock (`now` is passed in), sleep, or send anything.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpupool_incluster.relay.changes import RelayEvent

__all__ = ["DEFAULT_IDLE_SECONDS", "DEFAULT_MAX_WINDOW_SECONDS", "Batcher"]

DEFAULT_IDLE_SECONDS = 1.0
DEFAULT_MAX_WINDOW_SECONDS = 10.0


@dataclass(slots=True)
class _Window:
    opened: float
    last: float
    newest: RelayEvent
    count: int
    earliest_seen: float


class Batcher:
    def __init__(self, *, idle: float = DEFAULT_IDLE_SECONDS, max_window: float = DEFAULT_MAX_WINDOW_SECONDS):
        if idle <= 0 or max_window < idle:
            raise ValueError("batching needs 0 < idle <= max_window")
        self.idle = idle
        self.max_window = max_window
        self._windows: dict[tuple[str, str, str], _Window] = {}

    def add(self, event: RelayEvent, now: float) -> list[RelayEvent]:
        """Take an event; return what must go out now (uncoalesced types, or a window it closed)."""
        key = event.window_key
        if key is None:
            return [event]
        ready = self.due(now)
        window = self._windows.get(key)
        if window is None:
            self._windows[key] = _Window(now, now, event, 1, event.seen_at)
        else:
            window.last, window.newest, window.count = now, event, window.count + 1
        return ready

    def due(self, now: float) -> list[RelayEvent]:
        """Close and return every window whose idle or maximum time has passed."""
        closed = [
            key
            for key, w in self._windows.items()
            if now - w.last >= self.idle or now - w.opened >= self.max_window
        ]
        return [self._close(key) for key in closed]

    def flush(self) -> list[RelayEvent]:
        return [self._close(key) for key in list(self._windows)]

    def next_deadline(self) -> float | None:
        """When the next window closes (None when none is open)."""
        if not self._windows:
            return None
        return min(min(w.last + self.idle, w.opened + self.max_window) for w in self._windows.values())

    def _close(self, key: tuple[str, str, str]) -> RelayEvent:
        window = self._windows.pop(key)
        # Latency is measured from the first event the delivery answers for.
        return dataclasses.replace(window.newest, coalesced=window.count, seen_at=window.earliest_seen)
