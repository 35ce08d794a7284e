"""VRAM enforcement decisions: which worker is over its `vram-limit`, and what to do about it.

Role: `VramWatch.check` takes one memory sample — per GPU, each worker's processes and the VRAM
NVML says they hold — and returns what to do: a Warning the first time a worker is over its limit,
then, once it has stayed over for the grace (default 2 consecutive samples), the pool's policy:
`kill` the offending process (the worker's largest on that GPU) or `evict` the pod. A worker back
under its limit starts its grace afresh. `suspects` tells the runner to sample again soon, so a
confirmed violation is acted on within a compute tick rather than a whole memory period.

Must not: signal processes or call the cluster (the runner applies the actions), or consider a
process that is not a worker's (the runner only passes workers' processes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["VramAction", "VramPolicy", "VramUse", "VramWatch"]

VramPolicy = Literal["kill", "evict"]


@dataclass(frozen=True, slots=True)
class VramUse:
    """One worker on one GPU in one sample: its limit (bytes, 0 = none) and its processes' VRAM."""

    key: str
    gpu: str
    limit: int
    used_by_pid: tuple[tuple[int, int], ...]

    @property
    def used(self) -> int:
        return sum(used for _, used in self.used_by_pid)


@dataclass(frozen=True, slots=True)
class VramAction:
    """`warn` (first sample over), `kill` (pid) or `evict` (the pod)."""

    kind: Literal["warn", "kill", "evict"]
    key: str
    gpu: str
    used: int
    limit: int
    pid: int | None = None

    @property
    def message(self) -> str:
        over = f"uses {self.used} bytes of VRAM on {self.gpu}, over its vram-limit of {self.limit} bytes"
        if self.kind == "warn":
            return f"worker {self.key} {over}"
        if self.kind == "kill":
            return f"killed process {self.pid} of worker {self.key}: it {over}"
        return f"evicting worker {self.key}: it {over}"


@dataclass(slots=True)
class VramWatch:
    policy: VramPolicy = "kill"
    grace_samples: int = 2
    _over: dict[tuple[str, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.grace_samples < 1:
            raise ValueError(f"VRAM grace must be at least 1 sample, got {self.grace_samples}")

    @property
    def suspects(self) -> bool:
        """True while some worker is over its limit but its grace has not run out."""
        return any(0 < count < self.grace_samples for count in self._over.values())

    def check(self, sample: Sequence[VramUse]) -> list[VramAction]:
        actions: list[VramAction] = []
        seen: set[tuple[str, str]] = set()
        for use in sample:
            if use.limit <= 0 or use.used <= use.limit:
                continue
            where = (use.key, use.gpu)
            seen.add(where)
            count = self._over.get(where, 0) + 1
            self._over[where] = count
            if count == 1:
                actions.append(VramAction("warn", use.key, use.gpu, use.used, use.limit))
            if count >= self.grace_samples:
                actions.append(self._act(use))
                self._over[where] = 0  # acted: the next violation gets a fresh grace
                seen.discard(where)
        for where in list(self._over):
            if where not in seen:
                del self._over[where]
        return actions

    def _act(self, use: VramUse) -> VramAction:
        if self.policy == "evict":
            return VramAction("evict", use.key, use.gpu, use.used, use.limit)
        pid = max(use.used_by_pid, key=lambda pair: (pair[1], pair[0]))[0]
        return VramAction("kill", use.key, use.gpu, use.used, use.limit, pid=pid)
