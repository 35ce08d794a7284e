"""FragmentationAware placement: put each pod where it grows expected fragmentation the least.

The measure (docs/placement.md): for a node n and a request shape m needing k GPUs, a GPU *fits*
m when its free TFLOPS and VRAM cover m's per-GPU amounts (and its model is the one m asks
for). The node's fragmentation for m is the free capacity, in GPUs (free TFLOPS / capacity), that
m cannot use: the free capacity of its GPUs that do not fit m — or all of its free capacity when
fewer than k of its GPUs fit m. The node's expected fragmentation is the sum over the recent
request mix (see `mix`) of weight × fragmentation. A candidate GPU is scored by how much placing
the pod on it changes its node's expected fragmentation (Δ, in GPUs; lower is better). A pod
asking for k GPUs takes the node whose k best GPUs have the smallest summed Δ (each GPU judged
alone). Ties go to the first node and GPU in the state's order, as in the other modes.

Δ for every GPU slot and request shape is cached, per shape of the mix (Δ is linear in the
weights), and recomputed only for nodes whose GPUs changed since (the state's change journal),
for shapes that join the mix, and all at once when the layout or capacities change; so a decision
costs a masked argmin over the slots, plus the rows the last reservations touched.

Must not: filter (the filters already ran), change the allocator's state (it only drains the state's
change journal), or do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.fragmentation_host import GpuBefore, host_deltas, host_only_deltas
from gpupool.core.allocator.mix import RequestMix, RequestShape, gpu_part
from gpupool.core.allocator.rows import row_any
from gpupool.core.allocator.state import AllocatorState

__all__ = ["FragmentationScorer", "shape_amounts"]

B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]
NEVER = np.int64(2**62)  # a threshold no free amount reaches
# Added to the Δ of a slot the filters removed: above any Δ (a few GPUs at most), and an addition
# costs a twentieth of a masked select over every slot.
REMOVED = np.float32(3e38)


def _masked(delta: F32, alive: B) -> F32:
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


def _amounts_at(
    state: AllocatorState, shape: RequestShape, pick: slice | npt.NDArray[np.intp]
) -> tuple[I64 | int, I64 | int]:
    """`shape_amounts`, as plain numbers when they are the same on every GPU (absolute amounts)."""
    if shape.dedicated or shape.share_milli is not None or shape.compute_percent is not None:
        return shape_amounts(state, shape, pick)
    return shape.tflops, shape.vram


def _needs(mix_shapes: tuple[RequestShape, ...]) -> npt.NDArray[np.int16]:
    """GPUs each mix shape needs on one node, shaped to broadcast over (mix shapes, nodes, 1)."""
    return np.array([s.gpu_count for s in mix_shapes], dtype=np.int16).reshape(-1, 1, 1)


@lru_cache(maxsize=8)
def _ones(width: int) -> F32:
    """A column of ones: row sums of (…, width) blocks as one product (see `rows`)."""
    ones = np.ones((width, 1), dtype=np.float32)
    ones.flags.writeable = False
    return ones


def _thresholds(state: AllocatorState, shape: RequestShape) -> tuple[I64, I64]:
    """Per slot: what a free GPU must still have for one GPU of `shape` (NEVER where it cannot)."""
    tflops, vram = shape_amounts(state, shape)
    usable = state.valid.copy()
    if shape.model:
        usable &= state.model_code == state.codes.get(shape.model, -1)
    return np.where(usable, tflops, NEVER), np.where(usable, vram, NEVER)


def _weighted(weights: F32, parts: F32) -> F32:
    """Σ weight × Δ per slot, rounded to 1e-5 GPU so equal placements tie exactly (float32 noise).

    `parts` is (mix shapes, slots); the sum runs over the mix shapes in order, one after the
    other, in float32 — the same number whichever slots it is asked for. Few slots (a node that
    changed): one product and one reduction; every slot (a re-weighted mix): row by row into one
    buffer, never a (mix shapes × slots) temporary.
    """
    count, size = parts.shape
    if count == 0:
        return np.zeros(size, dtype=np.float32)
    if size <= 4096:
        total = np.add.reduce(parts * weights[:, None], axis=0, dtype=np.float32)
    else:
        total = parts[0] * weights[0]
        term = np.empty(size, dtype=np.float32)
        for row in range(1, count):
            np.multiply(parts[row], weights[row], out=term)
            total += term
    rounded: F32 = np.round(total, 5)
    return rounded


@dataclass(slots=True)
class _Entry:
    """One request shape: Δ per (mix shape, slot), rows in the scorer's shape order, and their
    weighted sum under `version`."""

    parts: F32
    delta: F32
    version: int = -1
    dirty: set[int] = field(default_factory=set)


class FragmentationScorer:
    """Cached Δ-fragmentation per request shape and GPU slot for one allocator's state.

    Δ is linear in the mix's weights, so each request shape keeps one row of Δ per mix shape
    (float32); re-weighting the mix costs one weighted sum, and a changed node its own rows.
    """

    def __init__(self, mix: RequestMix | None = None, *, cached_shapes: int = 24) -> None:
        self.mix = mix or RequestMix()
        self.cached_shapes = cached_shapes
        self._layout: tuple[int, int] | None = None
        self._shapes: tuple[RequestShape, ...] = ()
        self._needs = _needs(())
        self._thresholds: dict[RequestShape, tuple[I64, I64]] = {}
        self._stacked: tuple[I64, I64] | None = None
        self._entries: dict[RequestShape, _Entry] = {}
        self._weights: F32 = np.zeros(0, dtype=np.float32)
        self._weights_version: tuple[int, tuple[int, int] | None] | None = None
        # With hosts known: per-node GPU-only terms, and the rows changed since they were refreshed
        # (None: all of them).
        self._before = GpuBefore()
        self._before_dirty: set[int] | None = None
        self._scales: F32 | None = None

    def deltas(self, state: AllocatorState, shape: RequestShape) -> F32:
        """Δ expected fragmentation (GPUs) of placing one GPU of `shape` on each slot, flat.

        With nodes' CPU and memory known (`set_host_free`), these count too (`fragmentation_host`).
        """
        weighted = self.mix.weights()
        gpu_only = self._gpu_deltas(state, shape.gpu_part(), weighted)
        if not state.host_free or not self._shapes:
            return gpu_only
        entry = self._entries[shape.gpu_part()]
        amount_t, _ = shape_amounts(state, shape)
        return host_deltas(
            state,
            shape,
            amount_t,
            weighted,
            self._shapes,
            entry.parts,
            self._gpu_before(state),
        )

    def node_deltas_without_gpu(self, state: AllocatorState, shape: RequestShape) -> F32:
        """Δ per node (rows) of a pod taking only CPU and memory; zeros when hosts are unknown."""
        weighted = self.mix.weights()
        state.ensure_layout()
        if not state.host_free or not weighted:
            return np.zeros(len(state.node_names), dtype=np.float32)
        self._gpu_deltas(state, weighted[0][0].gpu_part(), weighted)  # brings the mix's shapes up to date
        return host_only_deltas(state, shape, weighted, self._shapes, self._gpu_before(state))

    def _gpu_before(self, state: AllocatorState) -> GpuBefore:
        key = (self._layout, self._shapes)
        self._before.refresh(
            state, key, self._shapes, self._threshold_rows(state, self._shapes), self._before_dirty
        )
        self._before_dirty = set()
        return self._before

    def _gpu_deltas(
        self, state: AllocatorState, shape: RequestShape, weighted: tuple[tuple[RequestShape, float], ...]
    ) -> F32:
        changed = state.take_changed_slots()
        layout = (state.static_version, state.cap_t.size)
        if layout != self._layout or changed is None:
            self._layout, self._shapes = layout, ()
            self._needs = _needs(())
            self._thresholds.clear()
            self._stacked = None
            self._scales = None
            self._entries.clear()
            self._before_dirty = None
        elif changed:
            rows = {slot // state.width for slot in changed}
            for entry in self._entries.values():
                entry.dirty.update(rows)
            if self._before_dirty is not None:
                self._before_dirty.update(rows)
        if self._weights_version != (self.mix.version, self._layout):
            weight_of: dict[RequestShape, float] = {}
            for mix_shape, weight in weighted:  # GPU shapes; their CPU and memory only matter with hosts
                weight_of[gpu_part(mix_shape)] = weight_of.get(gpu_part(mix_shape), 0.0) + weight
            if weight_of.keys() != set(self._shapes):  # keep the old order: rows stay where they are
                kept = tuple(s for s in self._shapes if s in weight_of)
                self._reshape(state, kept + tuple(s for s in weight_of if s not in set(kept)))
            self._weights = np.array([weight_of[s] for s in self._shapes], dtype=np.float32)
            self._weights_version = (self.mix.version, self._layout)
        entry = self._entries.get(shape) or self._new_entry(state, shape)
        weights = self._weights
        if entry.dirty:
            rows_array = np.fromiter(sorted(entry.dirty), dtype=np.intp, count=len(entry.dirty))
            entry.dirty.clear()
            pick = (rows_array[:, None] * state.width + np.arange(state.width)).ravel()
            fresh = self._parts(state, shape, self._shapes, (pick, rows_array.size))
            entry.parts[:, pick] = fresh
            if entry.version == self.mix.version:
                entry.delta[pick] = _weighted(weights, fresh)
        if entry.version != self.mix.version:
            entry.delta = _weighted(weights, entry.parts)
            entry.version = self.mix.version
        return entry.delta

    def _new_entry(self, state: AllocatorState, shape: RequestShape) -> _Entry:
        if len(self._entries) >= self.cached_shapes:  # forget the oldest shape
            self._entries.pop(next(iter(self._entries)))
        parts = self._parts(state, shape, self._shapes, None)
        entry = self._entries[shape] = _Entry(parts, np.zeros(state.cap_t.size, dtype=np.float32))
        return entry

    def _reshape(self, state: AllocatorState, shapes: tuple[RequestShape, ...]) -> None:
        """A new set of mix shapes: keep the rows of shapes that stayed, compute the new ones."""
        row_of = {s: i for i, s in enumerate(self._shapes)}
        added = tuple(s for s in shapes if s not in row_of)
        kept = [row_of[s] for s in shapes if s in row_of]
        for request_shape, entry in self._entries.items():
            fresh = self._parts(state, request_shape, added, None)
            parts = np.empty((len(shapes), state.cap_t.size), dtype=np.float32)
            position = {s: i for i, s in enumerate(shapes)}
            parts[[position[s] for s in shapes if s in row_of]] = entry.parts[kept]
            parts[[position[s] for s in added]] = fresh
            entry.parts = parts
            entry.version = -1
        self._shapes = shapes
        self._needs = _needs(shapes)
        self._stacked = None

    def _scale(self, state: AllocatorState) -> F32:
        """Per slot, 1 / TFLOPS capacity (0 for padding): free TFLOPS times it is free GPUs."""
        if self._scales is None or self._scales.size != state.cap_t.size:
            cap_t = state.cap_t
            ratio = np.where(state.valid & (cap_t > 0), 1.0 / np.maximum(cap_t, 1), 0.0)
            self._scales = ratio.astype(np.float32)
        return self._scales

    def _threshold_rows(self, state: AllocatorState, shapes: tuple[RequestShape, ...]) -> tuple[I64, I64]:
        if shapes == self._shapes and self._stacked is not None:
            return self._stacked
        for shape in shapes:
            if shape not in self._thresholds:
                self._thresholds[shape] = _thresholds(state, shape)
        if not shapes:
            empty = np.zeros((0, state.cap_t.size), dtype=np.int64)
            return empty, empty
        stacked = (
            np.stack([self._thresholds[s][0] for s in shapes]),
            np.stack([self._thresholds[s][1] for s in shapes]),
        )
        if shapes == self._shapes:
            self._stacked = stacked
        return stacked

    def _parts(
        self,
        state: AllocatorState,
        shape: RequestShape,
        mix_shapes: tuple[RequestShape, ...],
        rows: tuple[npt.NDArray[np.intp], int] | None,
    ) -> F32:
        """Δ of one GPU of `shape` per (mix shape, slot), for every slot or, with `rows` =
        (their slots, how many nodes), for some whole nodes' slots."""
        width = state.width
        if rows is None:
            pick: slice | npt.NDArray[np.intp] = slice(None)
            count = state.cap_t.size // width if width else 0
        else:
            pick, count = rows
        if not mix_shapes:
            return np.zeros((0, count * width), dtype=np.float32)
        thr_t, thr_v = self._threshold_rows(state, mix_shapes)
        amount_t, amount_v = _amounts_at(state, shape, pick)
        needs = self._needs if mix_shapes is self._shapes else _needs(mix_shapes)
        avail_t, avail_v = state.avail_t[pick], state.avail_v[pick]
        after_t, after_v = avail_t - amount_t, avail_v - amount_v
        scale = self._scale(state)[pick]
        free_b = (np.maximum(avail_t, 0) * scale).astype(np.float32).reshape(1, count, width)
        free_a = (np.maximum(after_t, 0) * scale).astype(np.float32).reshape(1, count, width)
        if rows is not None:
            thr_t, thr_v = thr_t.take(pick, axis=1), thr_v.take(pick, axis=1)
        shaped = (-1, count, width)
        fit_b = ((avail_t >= thr_t) & (avail_v >= thr_v)).reshape(shaped)
        fit_a = ((after_t >= thr_t) & (after_v >= thr_v)).reshape(shaped)
        ones = _ones(width)
        total_b = free_b @ ones  # (1, nodes, 1): each node's free capacity, in GPUs
        used_b = free_b * fit_b  # free capacity on GPUs that fit each mix shape
        used_a = free_a * fit_a
        # GPUs that fit, per (mix shape, node), counted exactly: one population count per 8 slots.
        words = np.bitwise_count(fit_b.view(np.uint64)).reshape(len(mix_shapes), count, width // 8)
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
        parts: F32 = frag_a.reshape(len(mix_shapes), -1)
        return parts

    def choose(self, state: AllocatorState, alive: B, shape: RequestShape) -> tuple[int, list[int]] | None:
        """The node row and slots with the smallest Δ; None when no slot survived."""
        width = alive.shape[1]
        if not alive.any():
            return None
        masked = _masked(self.deltas(state, shape), alive)
        if shape.gpu_count <= 1:
            best = int(np.argmin(masked))
            return best // width, [best]
        by_node = masked.reshape(-1, width)
        row = int(np.argmin(self._node_totals(by_node, alive, shape.gpu_count)))
        columns = np.argsort(by_node[row], kind="stable")[: shape.gpu_count]
        return row, [row * width + int(c) for c in columns.tolist()]

    def node_scores(self, state: AllocatorState, alive: B, shape: RequestShape) -> F64:
        """0..100 per node (100 = least fragmentation added among the candidates); NaN when none fits."""
        width = alive.shape[1]
        if not alive.any():
            return np.full(alive.shape[0], np.nan)
        masked = _masked(self.deltas(state, shape), alive).reshape(-1, width)
        totals = self._node_totals(masked, alive, max(1, shape.gpu_count))
        finite = np.isfinite(totals)
        low, high = float(totals[finite].min()), float(totals[finite].max())
        spread = high - low
        scores = 100.0 if spread <= 0 else 100.0 * (high - totals) / spread
        return np.where(finite, scores, np.nan)

    @staticmethod
    def _node_totals(masked: F32, alive: B, count: int) -> F64:
        """Per node, the sum of its `count` smallest Δ (float64, as a sum of float32 values);
        ∞ for a node with fewer than `count` surviving slots (a removed slot counts REMOVED)."""
        if count <= 1:
            smallest = masked[:, 0].copy()
            for column in range(1, masked.shape[1]):  # column by column: no per-row reduction loop
                np.minimum(smallest, masked[:, column], out=smallest)
            totals: F64 = smallest.astype(np.float64)
        else:
            totals = np.sort(masked, axis=1)[:, :count].astype(np.float64).sum(axis=1)
        kept: F64 = np.where(row_any(alive) & (totals < REMOVED), totals, np.inf)
        return kept
