"""How many replicas of a workload already moved to TensorFusion (for `enabled-replicas`), from the Pod watch.

Role: per controlling owner (ReplicaSet, StatefulSet, …), the live pods the watch has seen
admitted to tensor-fusion-scheduler: that, and only that, is the count the webhook decides with.
An AdmissionReview proves nothing (anyone who can reach the webhook can send one naming any owner),
so a review never counts as a replica; it only marks the owner *unsettled*: the webhook let one
replica move and the watch has not shown it yet. While an owner is unsettled, the next admission
of a replica that asks for `enabled-replicas` waits (the relay's webhook route, up to `settle`
seconds) for the watch to catch up, so a burst of replicas created together cannot all slip under
the limit — and a forged review costs a real replica at most `settle` seconds, never its slot. A
mark the watch does not settle within `settle` seconds (a forged review, or a create that failed
after the webhook) lapses. Marks are bounded per owner and in all.

Must not: decide admission (the webhook's core does), wait (the caller does), or call the API server.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod

__all__ = ["ReplicaLedger", "controller_uid"]

MAX_MARKS_PER_OWNER = 256
MAX_OWNERS_MARKED = 10_000


def controller_uid(pod: Pod) -> str | None:
    return next((o.uid for o in pod.metadata.owner_references if o.controller and o.uid), None)


class ReplicaLedger:
    """Moved replicas per owner (watched pods) and unsettled admissions; callers serialise access."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, settle: float = 2.0) -> None:
        self.clock = clock
        self.settle = settle
        self.members: dict[str, set[str]] = {}
        self.marks: dict[str, list[float]] = {}

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
                marks = self._fresh(owner)
                if marks:
                    marks.pop(0)  # the admission this pod came from has settled
        else:
            members.discard(key)
            if not members:
                del self.members[owner]

    def admitted(self, owner: str) -> None:
        """The webhook let one replica of `owner` move; the watch will show it soon (or never)."""
        if len(self.marks) >= MAX_OWNERS_MARKED:
            for marked in list(self.marks):
                self._fresh(marked)
        marks = self._fresh(owner)
        if len(marks) < MAX_MARKS_PER_OWNER and (marks or len(self.marks) < MAX_OWNERS_MARKED):
            marks.append(self.clock())
            self.marks[owner] = marks

    def migrated(self, owner: str | None) -> int:
        """Replicas of `owner` the watch shows on TensorFusion (never admissions it has not shown)."""
        if owner is None:
            return 0
        return len(self.members.get(owner, ()))

    def unsettled(self, owner: str | None) -> int:
        """Admissions of `owner` within the last `settle` seconds the watch has not shown yet."""
        return 0 if owner is None else len(self._fresh(owner))

    def _fresh(self, owner: str) -> list[float]:
        horizon = self.clock() - self.settle
        marks = [t for t in self.marks.get(owner, []) if t > horizon]
        if marks:
            self.marks[owner] = marks
        else:
            self.marks.pop(owner, None)
            marks = []
        return marks
