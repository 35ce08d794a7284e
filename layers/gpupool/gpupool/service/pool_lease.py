"""The per-pool Lease: one invocation at a time reads and changes a pool's capacity.

Role: `PoolLease(deps, pool, dry_run=...)` — `hold()` takes or renews the pool's coordination
Lease (`gpupool-pool-<pool>`) for this invocation, `release()` gives it back. A renewal within a
quarter of the lease's duration of the last take is not sent: no other holder can take a Lease
before it expires, so the hold is certain until then. Launch holds it
while it fills the gap and compaction while it removes nodes, so a launch and a compaction on
the same pool never interleave between the snapshot they decide on and the writes they make
(the loser notes that the pool is busy; the next trigger re-decides on fresh state). A dry run
changes nothing, so it takes no lease.

Must not: decide anything, or hold a lease past the invocation (release runs in `finally`).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from gpupool.service.deps import Deps

__all__ = ["PoolLease", "lease_name"]


def lease_name(pool: str) -> str:
    return f"gpupool-pool-{pool}"[:253]


class PoolLease:
    """One invocation's hold on one pool's Lease."""

    def __init__(self, deps: Deps, pool: str, *, dry_run: bool) -> None:
        self._deps, self._name, self._dry_run = deps, lease_name(pool), dry_run
        # One holder per invocation: two invocations sharing one Deps (threads, a warm sandbox)
        # must not both pass as "the same holder renewing".
        self._holder = f"{deps.holder}-{uuid.uuid4().hex[:8]}"
        self._held = False
        self._taken_at: datetime | None = None

    def hold(self) -> bool:
        """Take or renew the Lease; False when another invocation holds it."""
        if self._dry_run:
            return True
        deps = self._deps
        now, duration = deps.clock.now(), deps.settings.lease_duration
        if self._held and self._taken_at is not None and now - self._taken_at < duration / 4:
            return True
        self._held = deps.cluster.try_acquire_lease(
            self._name, holder=self._holder, now=now, duration=duration
        )
        self._taken_at = now if self._held else None
        return self._held

    def release(self) -> None:
        if self._held:
            self._deps.cluster.release_lease(self._name, holder=self._holder)
            self._held = False
            self._taken_at = None
