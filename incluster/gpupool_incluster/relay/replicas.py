"""How many replicas of a workload already moved to TensorFusion (for `enabled-replicas`).

Role: per controlling owner (ReplicaSet, StatefulSet, …), the live pods the watch has seen
admitted to tensor-fusion-scheduler, plus admissions the webhook made that the watch has not
shown yet — so a burst of replicas created together cannot all slip under the limit. An
admission not seen within `pending_ttl` seconds (the create failed after the webhook) expires.

Must not: decide admission (the webhook's core does) or call the API server.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod

__all__ = ["ReplicaLedger", "controller_uid"]


def controller_uid(pod: Pod) -> str | None:
    return next((o.uid for o in pod.metadata.owner_references if o.controller and o.uid), None)


class ReplicaLedger:
    """Moved replicas per owner; callers serialise access."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, pending_ttl: float = 30.0) -> None:
        self.clock = clock
        self.pending_ttl = pending_ttl
        self.members: dict[str, set[str]] = {}
        self.pending: dict[str, list[float]] = {}

    def observe(self, pod: Pod, key: str, *, finished: bool) -> None:
        """A watched pod: count it while it lives on tensor-fusion-scheduler as a TensorFusion pod."""
        owner = controller_uid(pod)
        if owner is None:
            return
        members = self.members.setdefault(owner, set())
        native = any("nvidia.com/gpu" in ct.resources.limits for ct in pod.spec.containers)
        moved = (
            pod.spec.scheduler_name == c.SCHEDULER_NAME
            and c.ANNOTATION_GPU_POOL in pod.metadata.annotations
            and not native
        )
        if moved and not finished:
            if key not in members:
                members.add(key)
                waiting = self._fresh(owner)
                if waiting:
                    waiting.pop(0)
        else:
            members.discard(key)

    def admitted(self, owner: str) -> None:
        """The webhook moved one replica of `owner`; the watch will show it soon."""
        self._fresh(owner).append(self.clock())

    def migrated(self, owner: str | None) -> int:
        if owner is None:
            return 0
        return len(self.members.get(owner, ())) + len(self._fresh(owner))

    def _fresh(self, owner: str) -> list[float]:
        horizon = self.clock() - self.pending_ttl
        waiting = [t for t in self.pending.get(owner, []) if t >= horizon]
        self.pending[owner] = waiting
        return waiting
