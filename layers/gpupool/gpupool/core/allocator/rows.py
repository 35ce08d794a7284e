"""Fast per-node reductions over the (nodes × GPU slots) masks.

Role: numpy's reductions along a short last axis pay a per-row overhead; these helpers use a
byte view (any) and a BLAS product (count, sum) instead, which is an order of magnitude faster
at thousands of nodes. The state pads its slot width to a multiple of 8 so the byte view works.

Must not: know what the masks mean.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["and_rows", "row_any", "row_count", "row_sum"]

B = npt.NDArray[np.bool_]
F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]


def row_any(mask: B) -> B:
    """Per row: is any slot set?"""
    rows, width = mask.shape
    if width % 8 or width == 0:
        result: B = np.asarray(mask.any(axis=1), dtype=np.bool_)
        return result
    words = np.ascontiguousarray(mask).view(np.uint64).reshape(rows, width // 8)
    if width == 8:
        result = np.asarray(words.ravel() != 0, dtype=np.bool_)
    else:
        result = np.asarray((words != 0).any(axis=1), dtype=np.bool_)
    return result


def row_count(mask: B) -> F64:
    """Per row: how many slots are set (as floats, exact for any realistic width)."""
    rows, width = mask.shape
    if width and width % 8 == 0:  # one population count per 8 slots
        words = np.ascontiguousarray(mask).view(np.uint64).reshape(rows, width // 8)
        bits = np.bitwise_count(words)
        return np.asarray(bits if width == 8 else bits.sum(axis=1), dtype=np.float64).reshape(rows)
    counts = mask.astype(np.float32) @ np.ones(width, dtype=np.float32)
    return np.asarray(counts, dtype=np.float64)


def row_sum(values: F64 | F32, mask: B) -> F64:
    """Per row: the sum of `values` over the set slots (in their own precision, returned as float64)."""
    width = mask.shape[1]
    total = (values * mask) @ np.ones(width, dtype=values.dtype)
    return np.asarray(total, dtype=np.float64)


def and_rows(mask: B, keep: B) -> None:
    """In place: clear every slot of the rows where `keep` is False (mask[r, :] &= keep[r]).

    Broadcasting one flag over a short row costs numpy a loop per row; with a byte view each
    row is whole 64-bit words, and-ed with all ones or all zeros.
    """
    rows, width = mask.shape
    if width == 0 or width % 8 or not mask.flags.c_contiguous:
        mask &= keep[:, None]
        return
    words = mask.view(np.uint64).reshape(rows, width // 8)
    fill = (-keep.astype(np.int64)).view(np.uint64)  # True → all ones, False → zero
    words &= fill[:, None]
