"""In-memory delivery ledger: the `DeliveryLedger` port as the contract tests hold the Lease one to.

Role: `MemoryDeliveryLedger` keeps one record per key — holder, state (`processing` / `done`),
expiry — under one lock, so a claim is the conditional write the Kubernetes one is (two racing
claims: one `first`, the other `in-progress`); an expired record is taken over; `complete` and
`release` act only for the record's holder; `prune` drops expired records. `fail_next(error)`
makes the next call raise `error` (an unreachable store). Simpler than the Lease ledger in one
way: no resourceVersions (the lock stands for them).

Must not: decide anything; import the adapters or any SDK.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpupool.service.deliveries import DeliveryState

__all__ = ["MemoryDeliveryLedger"]


@dataclass
class _Record:
    holder: str
    state: str
    expires: datetime


class MemoryDeliveryLedger:
    """Delivery records in a dict, by key."""

    def __init__(self) -> None:
        self.records: dict[str, _Record] = {}
        self._lock = threading.Lock()
        self._failures: deque[Exception] = deque()

    def fail_next(self, error: Exception) -> None:
        self._failures.append(error)

    def _fail(self) -> None:
        if self._failures:
            raise self._failures.popleft()

    def claim(self, key: str, *, holder: str, now: datetime, hold_for: timedelta) -> DeliveryState:
        with self._lock:
            self._fail()
            record = self.records.get(key)
            if record is not None and record.expires > now:
                return "done" if record.state == "done" else "in-progress"
            self.records[key] = _Record(holder, "processing", now + hold_for)
            return "first"

    def complete(self, key: str, *, holder: str, now: datetime, keep_for: timedelta) -> None:
        with self._lock:
            self._fail()
            record = self.records.get(key)
            if record is not None and record.holder == holder:
                self.records[key] = _Record(holder, "done", now + keep_for)

    def release(self, key: str, *, holder: str) -> None:
        with self._lock:
            self._fail()
            record = self.records.get(key)
            if record is not None and record.holder == holder:
                del self.records[key]

    def prune(self, *, now: datetime) -> int:
        with self._lock:
            self._fail()
            expired = [key for key, record in self.records.items() if record.expires <= now]
            for key in expired:
                del self.records[key]
            return len(expired)
