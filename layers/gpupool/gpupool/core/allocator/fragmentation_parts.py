"""The arithmetic of FragmentationAware's measure: Δ per (mix shape, GPU slot) for one request.

Role: pure functions over the allocator state's arrays — what one GPU of a request shape takes
on each slot, what a slot must keep free for a mix shape, and, for a block of whole nodes, how
placing one GPU of the request on each slot changes each node's fragmentation for each mix
shape (docs/placement.md, "The measure"); then the mix-weighted sum and the masking of slots the
filters removed. `fragmentation.FragmentationScorer` decides what to cache and when to call them.

Must not: cache, mutate the state or do I/O.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.mix import RequestShape
from gpupool.core.allocator.state import AllocatorState

__all__ = [
    "NEVER",
    "REMOVED",
    "amounts_at",
    "gpu_needs",
    "masked_deltas",
    "shape_amounts",
    "slot_parts",
    "slot_thresholds",
    "weighted_deltas",
]

B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]
NEVER = np.int64(2**62)  # a threshold no free amount reaches
# Added to the Δ of a slot the filters removed: above any Δ (a few GPUs at most), and an addition
# costs a twentieth of a masked select over every slot.
REMOVED = np.float32(3e38)


def masked_deltas(delta: F32, alive: B) -> F32:
    """Δ per slot (flat), removed slots pushed past every surviving one (REMOVED, not ∞: 0 × ∞)."""
    masked = np.multiply(~alive.ravel(), REMOVED, dtype=np.float32)
    masked += delta
    return masked


def shape_amounts(
    state: AllocatorState, shape: RequestShape, pick: slice | npt.NDArray[np.intp] = slice(None)
) -> tuple[I64, I64]:
    """Per slot (of `pick`): the TFLOPS and VRAM one GPU of `shape` takes there, as the filters say."""
    cap_t, cap_v = state.cap_t[pick], state.cap_v[pick]
    if shape.dedicated:
        return cap_t.copy(), cap_v.copy()
    if shape.share_milli is not None:
        return (cap_t * shape.share_milli) // 1000, (cap_v * shape.share_milli) // 1000
    if shape.compute_percent is not None:
        tflops = np.ceil(cap_t.astype(np.float64) * (shape.compute_percent / 100.0)).astype(np.int64)
        return tflops, np.full(cap_t.size, shape.vram, dtype=np.int64)
    return np.full(cap_t.size, shape.tflops, dtype=np.int64), np.full(cap_t.size, shape.vram, dtype=np.int64)


def amounts_at(
    state: AllocatorState, shape: RequestShape, pick: slice | npt.NDArray[np.intp]
) -> tuple[I64 | int, I64 | int]:
    """`shape_amounts`, as plain numbers when they are the same on every GPU (absolute amounts)."""
    if shape.dedicated or shape.share_milli is not None or shape.compute_percent is not None:
        return shape_amounts(state, shape, pick)
    return shape.tflops, shape.vram


def gpu_needs(mix_shapes: tuple[RequestShape, ...]) -> npt.NDArray[np.int16]:
    """GPUs each mix shape needs on one node, shaped to broadcast over (mix shapes, nodes, 1)."""
    return np.array([s.gpu_count for s in mix_shapes], dtype=np.int16).reshape(-1, 1, 1)


@lru_cache(maxsize=8)
def _ones(width: int) -> F32:
    """A column of ones: row sums of (…, width) blocks as one product (see `rows`)."""
    ones = np.ones((width, 1), dtype=np.float32)
    ones.flags.writeable = False
    return ones


def slot_thresholds(state: AllocatorState, shape: RequestShape) -> tuple[I64, I64]:
    """Per slot: what a free GPU must still have for one GPU of `shape` (NEVER where it cannot)."""
    tflops, vram = shape_amounts(state, shape)
    usable = state.valid.copy()
    if shape.model:
        usable &= state.model_code == state.codes.get(shape.model, -1)
    return np.where(usable, tflops, NEVER), np.where(usable, vram, NEVER)


def weighted_deltas(weights: F32, parts: F32) -> F32:
    """Σ weight × Δ per slot, rounded to 1e-5 GPU so equal placements tie exactly (float32 noise).

    `parts` is (mix shapes, slots); the sum runs over the mix shapes in order, one after the
    other, in float32 — the same number whichever slots it is asked for. Few slots (a node that
    changed): one product and one reduction; every slot (a re-weighted mix): row by row into one
    buffer, never a (mix shapes × slots) temporary.
    """
    count, size = parts.shape
    if count == 0:
        return np.zeros(size, dtype=np.float32)
    total: F32
    if size <= 4096:
        total = np.add.reduce(parts * weights[:, None], axis=0, dtype=np.float32)
    else:
        total = np.multiply(parts[0], weights[0], dtype=np.float32)
        term = np.empty(size, dtype=np.float32)
        for row in range(1, count):
            np.multiply(parts[row], weights[row], out=term)
            total += term
    rounded: F32 = np.round(total, 5)
    return rounded


def slot_parts(
    state: AllocatorState,
    shape: RequestShape,
    thresholds: tuple[I64, I64],
    needs: npt.NDArray[np.int16],
    scales: F32,
    pick: slice | npt.NDArray[np.intp],
    count: int,
) -> F32:
    """Δ of one GPU of `shape` per (mix shape, slot of `pick`): `count` whole nodes' slots.

    `thresholds` and `needs` are the mix shapes' (see `slot_thresholds`, `gpu_needs`), `scales`
    1 / TFLOPS capacity per slot.
    """
    thr_t, thr_v = thresholds
    width = state.width
    amount_t, amount_v = amounts_at(state, shape, pick)
    avail_t, avail_v = state.avail_t[pick], state.avail_v[pick]
    after_t, after_v = avail_t - amount_t, avail_v - amount_v
    scale = scales[pick]
    free_b = (np.maximum(avail_t, 0) * scale).astype(np.float32).reshape(1, count, width)
    free_a = (np.maximum(after_t, 0) * scale).astype(np.float32).reshape(1, count, width)
    if not isinstance(pick, slice):  # a few nodes: gathered in C order
        thr_t, thr_v = thr_t.take(pick, axis=1), thr_v.take(pick, axis=1)
    shaped = (-1, count, width)
    fit_b = ((avail_t >= thr_t) & (avail_v >= thr_v)).reshape(shaped)
    fit_a = ((after_t >= thr_t) & (after_v >= thr_v)).reshape(shaped)
    ones = _ones(width)
    total_b = free_b @ ones  # (1, nodes, 1): each node's free capacity, in GPUs
    used_b = free_b * fit_b  # free capacity on GPUs that fit each mix shape
    used_a = free_a * fit_a
    # GPUs that fit, per (mix shape, node), counted exactly: one population count per 8 slots.
    words = np.bitwise_count(fit_b.view(np.uint64)).reshape(needs.shape[0], count, width // 8)
    fits_b = words.sum(axis=2, dtype=np.int16, keepdims=True)
    used_sum = used_b @ ones
    frag_b = np.where(fits_b >= needs, total_b - used_sum, total_b)
    fits_a = fits_b + fit_a.view(np.int8)  # the node's count, with this slot's fit changed
    fits_a -= fit_b.view(np.int8)
    total_a = total_b + (free_a - free_b)
    wasted_a = total_a - used_sum
    np.subtract(used_b, used_a, out=used_b)
    wasted_a += used_b
    frag_a = np.where(fits_a >= needs, wasted_a, total_a)
    frag_a -= frag_b
    parts: F32 = frag_a.reshape(needs.shape[0], -1)
    return parts
