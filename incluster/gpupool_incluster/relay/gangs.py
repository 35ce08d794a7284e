"""The bind verb's gang gate: members of a gang bind together, or their GPUs go back.

Role: `GangGate.check(pod, key)` runs right after a member reserved its GPUs: while the gang
is short of `gang-min-members` it raises BindFailed with the reason — the reservation stays
held, so kube-scheduler's retry finds it on the same node — and once enough members hold
theirs, each one's bind goes through. `sweep(allocator)` releases the reservations of gangs
whose `gang-timeout` passed before they were complete (the hub calls it on every filter and
bind). `forget(key)` drops a finished or deleted member.

Must not: write to the API server or decide placement (the core's `GangBook` decides).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from gpupool.core.allocator import Allocator
from gpupool.core.model.foreign import Pod
from gpupool.scheduler.extender.gang import GangBook, gang_of
from gpupool_incluster.relay.ports import BindFailed

__all__ = ["GangGate"]


class GangGate:
    """Gang bookkeeping for one hub (call every method with the hub's lock held)."""

    def __init__(self, now: Callable[[], datetime] | None = None) -> None:
        self.book = GangBook()
        self._now = now or (lambda: datetime.now(UTC))

    def check(self, pod_raw: Mapping[str, Any], key: str) -> None:
        """BindFailed while the pod's gang is incomplete (its reservation stays held)."""
        spec = gang_of(Pod.model_validate(pod_raw))
        if spec is None:
            return
        verdict = self.book.arrive(spec, key, now=self._now())
        if not verdict.complete:
            raise BindFailed(verdict.reason(spec.group))

    def sweep(self, allocator: Allocator) -> list[str]:
        """Release what the members of timed-out gangs hold; the released pods' keys."""
        released: list[str] = []
        for members in self.book.expire(now=self._now()).values():
            for key in members:
                if allocator.release(key) is not None:
                    released.append(key)
        return released

    def forget(self, key: str) -> None:
        self.book.forget(key)
