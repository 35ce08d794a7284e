"""Who shares each GPU: isolation modes and dedicated workers, kept as per-slot arrays.

Role: for every GPU slot, how many workers of each isolation mode (shared, soft, hard,
partitioned) and how many dedicated workers it holds, folded into one flags byte per slot, plus
the GPU's own `status.isolationMode` and whether it reports partitions. The `isolation` and
`partition` filter stages are then one or two vector operations over the flags (see
docs/scheduling.md, "Isolation", for the rules and why).

Must not: decide placement (filters do), format candidates' names, do I/O.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.records import Allocation, GpuInfo

__all__ = ["CONFLICTS", "DEDICATED", "MODE_BITS", "Tenancy", "isolation_reason", "partition_reason"]

B = npt.NDArray[np.bool_]
U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]

MODE_BITS: Final = {"shared": 1, "soft": 2, "hard": 4, "partitioned": 8}
DEDICATED: Final = 16
_COLUMNS: Final = (*MODE_BITS.values(), DEDICATED)
_COLUMN_OF: Final = {bit: column for column, bit in enumerate(_COLUMNS)}
# Workers of these modes already on a GPU keep a new worker of the key's mode off it.
CONFLICTS: Final = {
    "shared": MODE_BITS["hard"] | MODE_BITS["partitioned"],
    "soft": MODE_BITS["hard"] | MODE_BITS["partitioned"],
    "hard": MODE_BITS["shared"] | MODE_BITS["soft"] | MODE_BITS["partitioned"],
    "partitioned": MODE_BITS["shared"] | MODE_BITS["soft"] | MODE_BITS["hard"],
}
_PARTNERS: Final = {
    "shared": "shared and soft workers share a GPU only with shared or soft workers",
    "soft": "shared and soft workers share a GPU only with shared or soft workers",
    "hard": "hard workers share a GPU only with other hard workers, whose limits are enforced too",
    "partitioned": "partitioned workers share a GPU only with other partitioned workers "
    "(the whole GPU runs in partition mode)",
}


def _bit(isolation: str) -> int:
    return MODE_BITS.get(isolation, MODE_BITS["soft"])


class Tenancy:
    """Per-slot worker counts by isolation mode, their flags, and the GPUs' isolation settings."""

    def __init__(self, size: int = 0) -> None:
        self.counts: I32 = np.zeros((size, len(_COLUMNS)), dtype=np.int32)
        self.flags: U8 = np.zeros(size, dtype=np.uint8)
        self.gpu_mode: U8 = np.zeros(size, dtype=np.uint8)  # 0: status.isolationMode unset
        self.partitions: B = np.zeros(size, dtype=np.bool_)
        self.pinned = 0  # slots whose GPU sets status.isolationMode

    def write_static(self, slot: int, gpu: GpuInfo) -> None:
        mode = MODE_BITS.get(gpu.isolation_mode, 0)
        self.pinned += int(mode != 0) - int(self.gpu_mode[slot] != 0)
        self.gpu_mode[slot] = mode
        self.partitions[slot] = gpu.partitions or gpu.isolation_mode == "partitioned"

    def apply(self, slot: int, allocation: Allocation, sign: int) -> None:
        row = self.counts[slot]
        row[_COLUMN_OF[_bit(allocation.isolation)]] += sign
        if allocation.dedicated:
            row[_COLUMN_OF[DEDICATED]] += sign
        self.flags[slot] = sum(bit for column, bit in enumerate(_COLUMNS) if row[column] > 0)

    def compatible(self, isolation: str, dedicated: bool) -> B:
        """Slots a new worker of this mode may join (flat, one entry per slot)."""
        bad = 0xFF if dedicated else CONFLICTS.get(isolation, 0) | DEDICATED
        ok: B = (self.flags & bad) == 0
        if self.pinned:
            ok &= (self.gpu_mode == 0) | (self.gpu_mode == _bit(isolation))
        return ok


def isolation_reason(tenancy: Tenancy, gpu: GpuInfo, slot: int, isolation: str, dedicated: bool) -> str:
    """Why the isolation stage removed one GPU."""
    mode = int(tenancy.gpu_mode[slot])
    if mode and mode != _bit(isolation):
        return (
            f"GPU is set up for {gpu.isolation_mode!r} isolation (status.isolationMode), "
            f"the pod asks for {isolation!r}"
        )
    counts = tenancy.counts[slot]
    if counts[_COLUMN_OF[DEDICATED]] > 0:
        return "GPU is held whole by a dedicated worker (tensor-fusion.ai/dedicated-gpu)"
    held = [
        f"{int(counts[_COLUMN_OF[bit]])} {name}" for name, bit in MODE_BITS.items() if counts[_COLUMN_OF[bit]]
    ]
    if dedicated:
        return f"the pod asks for a dedicated GPU and this one already runs workers ({', '.join(held)})"
    return f"GPU runs {', '.join(held)} worker(s); {_PARTNERS.get(isolation, 'incompatible isolation')}"


def partition_reason(gpu: GpuInfo) -> str:
    """Why the partition stage removed one GPU."""
    return (
        f"GPU reports no partition support (status.isolationMode is {gpu.isolation_mode or 'unset'!r}, "
        "no status.allocatedPartitions); isolation 'partitioned' needs a GPU set up for partitions"
    )
