"""The allocator state's per-slot arrays: what each GPU slot holds, as numpy columns.

Role: `SlotArrays` declares, in one place, the arrays `AllocatorState` keeps for every GPU slot
(node by node, `width` slots per node): validity, pool / model / vendor codes, phase, index,
capacity, free capacity, placed limits and their caps and room, workers, the two TensorFusion
scores and the tenancy records. `_empty_arrays(size)` (re)allocates them zeroed; the state fills
and updates them (`gpupool.core.allocator.state`).

Must not: hold records or update cells (the state does).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.tenancy import Tenancy

__all__ = ["F32", "F64", "I32", "I64", "B", "SlotArrays"]

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]
B = npt.NDArray[np.bool_]


class SlotArrays:
    """The per-slot columns, allocated zeroed for `size` slots."""

    def _empty_arrays(self, size: int = 0) -> None:
        self.valid: B = np.zeros(size, dtype=np.bool_)
        self.pool_code: I32 = np.zeros(size, dtype=np.int32)
        self.model_code: I32 = np.zeros(size, dtype=np.int32)
        self.vendor_code: I32 = np.zeros(size, dtype=np.int32)
        self.phase_ok: B = np.zeros(size, dtype=np.bool_)
        self.gpu_index: I32 = np.full(size, -1, dtype=np.int32)
        self.cap_t: I64 = np.zeros(size, dtype=np.int64)
        self.cap_v: I64 = np.zeros(size, dtype=np.int64)
        self.avail_t: I64 = np.zeros(size, dtype=np.int64)
        self.avail_v: I64 = np.zeros(size, dtype=np.int64)
        self.limits_t: I64 = np.zeros(size, dtype=np.int64)
        self.limits_v: I64 = np.zeros(size, dtype=np.int64)
        self.limit_cap_t: I64 = np.zeros(size, dtype=np.int64)
        self.limit_cap_v: I64 = np.zeros(size, dtype=np.int64)
        # limit_cap − limits, kept in step with both: the oversubscription stage's one comparison.
        self.limit_room_t: I64 = np.zeros(size, dtype=np.int64)
        self.limit_room_v: I64 = np.zeros(size, dtype=np.int64)
        self.workers: I32 = np.zeros(size, dtype=np.int32)
        # Whole numbers 0..100: float32 holds them, and their per-node sums, exactly (see scoring).
        self.score_compact: F32 = np.zeros(size, dtype=np.float32)
        self.score_low_load: F32 = np.zeros(size, dtype=np.float32)
        self.tenancy = Tenancy(size)
