"""The cloud side of the scale benchmark: the package's in-memory `Compute`, shared across processes.

Role: `ScaleCompute(instances, cluster=…, launch_time=…)` is `gpupool.testing.memory_ports.
MemoryCompute` (the service tests' and the simulation's cloud) holding the world's instances,
with ids counting on from the world's last, the call log off, and the two things the benchmark
needs because each function runs in its own process: `changes()` — the instances this process
launched or terminated — and `apply(changes)` to take on another process's.

Must not: decide anything, or report an instance that is not tagged for the cluster.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import datetime

from gpupool.core.model.instance import ManagedInstance
from gpupool.testing.memory_ports import MemoryClock, MemoryCompute

__all__ = ["ScaleCompute"]


class ScaleCompute(MemoryCompute):
    def __init__(self, instances: Sequence[ManagedInstance], *, cluster: str, launch_time: datetime) -> None:
        super().__init__(MemoryClock(launch_time), cluster=cluster)
        self.keep_calls = False
        self.instances.update((i.instance_id, i) for i in instances)
        self._initial = dict(self.instances)
        self._ids = itertools.count(len(self.instances) + 1)

    def changes(self) -> dict[str, ManagedInstance]:
        """Every instance launched or terminated here, as it stands (for the next function's cloud)."""
        return {i: inst for i, inst in self.instances.items() if self._initial.get(i) != inst}

    def apply(self, changes: Mapping[str, ManagedInstance]) -> None:
        """Take on another function's `changes()`: the account is one, the functions several."""
        self.instances.update(changes)
        self._initial.update(changes)
        self._ids = itertools.count(max(int(i[2:], 16) for i in self.instances) + 1)
