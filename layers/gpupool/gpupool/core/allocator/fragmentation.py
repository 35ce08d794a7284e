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
costs a masked argmin over the slots, plus the rows the last reservations touched. The arithmetic
itself is in `fragmentation_parts`; with nodes' CPU and memory known, `fragmentation_host`.

Must not: filter (the filters already ran), change the allocator's state (it only drains the state's
change journal), or do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.fragmentation_host import GpuBefore, host_deltas, host_only_deltas
from gpupool.core.allocator.fragmentation_parts import (
    REMOVED,
    gpu_needs,
    masked_deltas,
    shape_amounts,
    slot_parts,
    slot_thresholds,
    weighted_deltas,
)
from gpupool.core.allocator.mix import RequestMix, RequestShape, gpu_part
from gpupool.core.allocator.rows import row_any
from gpupool.core.allocator.state import AllocatorState

__all__ = ["FragmentationScorer", "shape_amounts"]

B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]


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
        self._needs = gpu_needs(())
        self._thresholds: dict[RequestShape, tuple[I64, I64]] = {}
        self._stacked: tuple[I64, I64] | None = None
        self._joining: tuple[tuple[RequestShape, ...], tuple[I64, I64]] | None = None
        self._entries: dict[RequestShape, _Entry] = {}
        self._weights: F32 = np.zeros(0, dtype=np.float32)
        self._weights_version: tuple[int, tuple[int, int] | None] | None = None
        # With hosts known: per-node GPU-only terms, and the rows changed since they were refreshed
        # (None: all of them).
        self._before = GpuBefore()
        self._before_dirty: set[int] | None = None
        self._scales: F32 | None = None

    def record(self, shape: RequestShape) -> None:
        """One more reservation of `shape` in the mix the expected fragmentation weighs."""
        self.mix.record(shape)

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
            self._needs = gpu_needs(())
            self._thresholds.clear()
            self._stacked = self._joining = None
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
                entry.delta[pick] = weighted_deltas(weights, fresh)
        if entry.version != self.mix.version:
            entry.delta = weighted_deltas(weights, entry.parts)
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
        position = {s: i for i, s in enumerate(shapes)}
        appended = kept == list(range(len(self._shapes))) and shapes[: len(kept)] == self._shapes
        for request_shape, entry in self._entries.items():
            fresh = self._parts(state, request_shape, added, None)
            if appended:  # only new shapes, after the old ones: one copy
                entry.parts = np.concatenate((entry.parts, fresh))
            else:
                parts = np.empty((len(shapes), state.cap_t.size), dtype=np.float32)
                parts[[position[s] for s in shapes if s in row_of]] = entry.parts[kept]
                parts[[position[s] for s in added]] = fresh
                entry.parts = parts
            entry.version = -1
        self._shapes = shapes
        self._needs = gpu_needs(shapes)
        self._stacked = self._joining = None

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
        if self._joining is not None and self._joining[0] is shapes:
            return self._joining[1]
        for shape in shapes:
            if shape not in self._thresholds:
                self._thresholds[shape] = slot_thresholds(state, shape)
        if not shapes:
            empty = np.zeros((0, state.cap_t.size), dtype=np.int64)
            return empty, empty
        stacked = (
            np.stack([self._thresholds[s][0] for s in shapes]),
            np.stack([self._thresholds[s][1] for s in shapes]),
        )
        if shapes == self._shapes:
            self._stacked = stacked
        else:  # the shapes joining the mix, asked once per cached request shape by `_reshape`
            self._joining = (shapes, stacked)
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
        thresholds = self._threshold_rows(state, mix_shapes)
        needs = self._needs if mix_shapes is self._shapes else gpu_needs(mix_shapes)
        return slot_parts(state, shape, thresholds, needs, self._scale(state), pick, count)

    def choose(self, state: AllocatorState, alive: B, shape: RequestShape) -> tuple[int, list[int]] | None:
        """The node row and slots with the smallest Δ; None when no slot survived."""
        width = alive.shape[1]
        if not alive.any():
            return None
        masked = masked_deltas(self.deltas(state, shape), alive)
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
        masked = masked_deltas(self.deltas(state, shape), alive).reshape(-1, width)
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
        if count <= 2:  # column by column (no per-row loop): the smallest and, for 2, the next
            smallest = masked[:, 0].copy()
            second = np.full_like(smallest, np.inf)
            for column in range(1, masked.shape[1]):
                if count == 2:
                    np.minimum(second, np.maximum(smallest, masked[:, column]), out=second)
                np.minimum(smallest, masked[:, column], out=smallest)
            totals: F64 = smallest.astype(np.float64)
            if count == 2:
                totals += second  # the same float64 sum as of the row's first two once sorted
        else:
            totals = np.sort(masked, axis=1)[:, :count].astype(np.float64).sum(axis=1)
        kept: F64 = np.where(row_any(alive) & (totals < REMOVED), totals, np.inf)
        return kept
