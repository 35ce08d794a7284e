"""Compute targets: how much of one GPU's SM time each worker on it may use (pure).

Role: `plan_targets` turns the workers sharing a GPU, each with a request and a limit share
(percent), into a target per worker. Requests are promises the scheduler made (it places on
physical capacity, so they normally fit). While they fit, every worker may run up to its limit —
TensorFusion's oversell comes from limits above requests, and the hardware time-slices the burst.
When the promises exceed the GPU (oversubscription, a swapped-in smaller GPU), QoS decides whose
promise is kept: capacity goes to requests in QoS order (critical, high, medium, low; then by
name), then what is left to burst, in the same order — so a `low` worker yields first and a
`critical` one keeps its request.

Must not: read samples, signal processes or keep state between calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ShareRequest", "plan_targets"]

FULL = 100.0


@dataclass(frozen=True, slots=True)
class ShareRequest:
    """One worker on one GPU: key, QoS rank (higher keeps first), request and limit percent."""

    key: str
    rank: int
    request: float
    limit: float


def plan_targets(workers: Sequence[ShareRequest], *, capacity: float = FULL) -> dict[str, float]:
    """Target percent per worker key; ≥ 100 means "do not throttle"."""
    if sum(w.request for w in workers) <= capacity + 1e-9:
        return {w.key: w.limit for w in workers}
    ordered = sorted(workers, key=lambda w: (-w.rank, w.key))
    left = capacity
    targets: dict[str, float] = {}
    for worker in ordered:
        granted = min(worker.request, left)
        targets[worker.key] = granted
        left -= granted
    for worker in ordered:
        extra = min(worker.limit - targets[worker.key], left)
        if extra > 0:
            targets[worker.key] += extra
            left -= extra
    return targets
