"""BalancedFit placement: Best-fit that keeps nodes' CPU and memory in step with their free GPUs.

The measure (docs/placement.md, "BalancedFit"). From the recent requests (`demand`), ρ is the CPU
and μ the memory a GPU of work brings on average. A node with G free GPUs (free TFLOPS over
capacity, summed over its GPUs), C CPU and M memory left can still fill about min(G, C/ρ, M/μ) of
them; the rest are *stranded*: S = max(0, G − C/ρ, G − M/μ). A GPU with a free part f is a
*leftover* to the extent the recent requests cannot use it: L = f × (1 − W), W the share of the
GPUs requested whose shape one GPU there still fits (its free TFLOPS and VRAM, and its model).

A pod asking for k GPUs of shape r is placed on the node with the smallest key
  ΔS (the node's stranded GPUs after − before) + the sum of ΔL over its k best GPUs for r,
then the node with the fewest GPUs (among nodes the key finds equal, the small ones go first and
the large ones stay whole for the requests only they can take: more GPUs on one node, more CPU
and memory), then the least free GPUs G (Best-fit), then the least CPU left, then the state's
order; on that
node, its k GPUs with the smallest ΔL, then the tightest (least free now), then by index. A pod
without GPUs (the simulator places those too) takes the node with the smallest ΔS of its CPU and
memory, then the least G (`host_only_keys`; the caller breaks the remaining ties by CPU left and
order). Nodes whose CPU and memory nobody told the allocator (`set_host_free`; the relay does not
today) have S = 0: there the mode is Best-fit with leftovers.

Keeping it within the extender's budget: slots with the same TFLOPS and VRAM capacity and model
form a GPU *kind*; per kind, the demand's shapes have one pair of thresholds, so W of a slot is a
lookup: its free TFLOPS and VRAM are ranked among the kind's sorted thresholds (`searchsorted`)
and a (shapes + 1)² table of cumulative weights gives W. L before (shared) and L after one GPU of
each request shape are cached per slot, with the position in the state's change log they were
computed at (`AllocatorState.changes_since`): a decision recomputes only the slots changed since;
new weights re-read W from the cached table indices (one gather); the demand's shapes changing,
the layout or a capacity rebuilds them. Each node's best ΔL (and runner-up, for one GPU) is kept
too, so a decision reads again only the nodes whose best GPUs the filters removed. With more
kinds than `max_kinds`, W is summed shape by shape instead (the same numbers, slower). G per node
is kept the same way.

Must not: filter (the filters already ran), change the allocator's state, or do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.demand import Demand, DemandProfile
from gpupool.core.allocator.fragmentation_parts import amounts_at, shape_amounts
from gpupool.core.allocator.mix import RequestShape
from gpupool.core.allocator.rows import row_any
from gpupool.core.allocator.state import HOST_UNKNOWN, AllocatorState

__all__ = ["BalancedFitScorer"]

B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Pick = slice | npt.NDArray[np.intp]
# Keys are rounded to this many decimals (GPUs) so equal placements tie exactly (float noise).
DECIMALS = 9


@dataclass(slots=True)
class _Leftovers:
    """L per slot for one placement (none: L before; one GPU of a request shape: L after), the
    index into the tables and the free part it was read from, the state's change position it
    reflects and the weights it was summed with."""

    index: I64
    part: F64
    leftover: F64
    position: int
    weights_version: int


@dataclass(slots=True)
class _Entry:
    """For one request shape: L after per slot, ΔL, and each node's best for the shape's count."""

    after: _Leftovers
    delta: F64
    best: F64  # per node, the sum of its `count` smallest ΔL (∞ where it has fewer GPUs)
    count: int
    # For one GPU: per node its smallest and next smallest ΔL and their GPUs (columns), so that a
    # node the filters trimmed is recomputed only when they removed both.
    runner_up: F64
    columns: npt.NDArray[np.intp]  # (nodes, 2)


class BalancedFitScorer:
    """Cached ΔL per request shape and slot, and G per node, for one allocator's state."""

    def __init__(
        self, profile: DemandProfile | None = None, *, cached_shapes: int = 32, max_kinds: int = 32
    ) -> None:
        self.profile = profile if profile is not None else DemandProfile()
        self.cached_shapes = cached_shapes
        self.max_kinds = max_kinds
        self._layout: tuple[int, ...] | None = None
        self._typical = 0
        self._scale: F64 = np.zeros(0)
        self._kind_of: I64 = np.zeros(0, dtype=np.int64)  # per slot; −1: padding
        self._representative: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)  # one slot per kind
        self._free: F64 = np.zeros(0)  # G per node
        self._free_position = -1
        self._node_gpus: F64 = np.zeros(0)  # per node, its GPUs (the first tie-break)
        self._shapes: tuple[RequestShape, ...] = ()  # the order thresholds and weights are kept in
        self._shapes_layout: tuple[int, ...] | None = None
        self._weights_version = 0
        self._read: tuple[int, tuple[int, ...]] | None = None  # the demand version and layout last read
        self._weights: F64 = np.zeros(0)
        # Per kind, the demand's thresholds sorted (kinds × shapes), and one flat table of
        # cumulative weights per kind: W = tables[kind, p, q] (see `_lookup`).
        self._sorted_t: I64 = np.zeros((0, 0), dtype=np.int64)
        self._sorted_v: I64 = np.zeros((0, 0), dtype=np.int64)
        self._ranks: tuple[I64, I64] | None = None  # per kind, each shape's rank in the sorted rows
        self._tables: F64 = np.zeros(0)
        self._per_slot: tuple[I64, I64] | None = None  # thresholds per (shape, slot): many kinds
        self._before: _Leftovers | None = None
        self._entries: dict[RequestShape, _Entry] = {}

    # ---- layout and demand ------------------------------------------------------------------

    def record(self, shape: RequestShape) -> None:
        """One more reservation of `shape` in the demand profile leftovers are judged by."""
        self.profile.record(shape)

    def _demand(self, state: AllocatorState) -> Demand | None:
        state.ensure_layout()
        layout = (state.generation, state.static_version, state.cap_t.size)
        if layout != self._layout:
            self._new_layout(state, layout)
        demand = self.profile.demand(self._typical)
        if demand is None or (demand.version, layout) == self._read:
            return demand
        self._read = (demand.version, layout)
        if set(demand.shapes) != set(self._shapes) or layout != self._shapes_layout:
            # Thresholds change: every entry starts again. (A new order of the same shapes does not.)
            self._shapes, self._shapes_layout = demand.shapes, layout
            self._entries.clear()
            self._before = None
            self._read_thresholds(state, demand.shapes)
            self._weights = np.zeros(0)
        weight_of = dict(zip(demand.shapes, demand.weights.tolist(), strict=True))
        weights = np.array([weight_of[shape] for shape in self._shapes])
        if not np.array_equal(weights, self._weights):
            self._weights = weights
            self._weights_version += 1
            self._tables = self._weight_tables(weights)
        return demand

    def _new_layout(self, state: AllocatorState, layout: tuple[int, ...]) -> None:
        self._layout = layout
        valid, cap_t, cap_v = state.valid, state.cap_t, state.cap_v
        self._typical = int(np.median(cap_t[valid])) if valid.any() else 0
        self._scale = np.where(valid & (cap_t > 0), 1.0 / np.maximum(cap_t, 1), 0.0)
        keys = np.stack((cap_t, cap_v, state.model_code.astype(np.int64)), axis=1)[valid]
        kinds, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        self._kind_of = np.full(cap_t.size, -1, dtype=np.int64)
        self._kind_of[np.flatnonzero(valid)] = inverse.reshape(-1)
        self._representative = np.flatnonzero(valid)[first] if kinds.size else np.zeros(0, dtype=np.intp)
        self._free = np.zeros(len(state.node_names))
        self._free_position = -1
        self._node_gpus = valid.reshape(-1, state.width).sum(axis=1).astype(np.float64)

    def _read_thresholds(self, state: AllocatorState, shapes: tuple[RequestShape, ...]) -> None:
        self._per_slot = self._ranks = None
        if self._representative.size > self.max_kinds:
            pairs = [_thresholds(state, shape, slice(None)) for shape in shapes]
            self._per_slot = (np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]))
            return
        pairs = [_thresholds(state, shape, self._representative) for shape in shapes]
        tflops = np.stack([p[0] for p in pairs], axis=1)  # (kinds, shapes)
        vram = np.stack([p[1] for p in pairs], axis=1)
        self._sorted_t, self._sorted_v = np.sort(tflops, axis=1), np.sort(vram, axis=1)
        rank_t = [np.searchsorted(row, t, side="left") for row, t in zip(self._sorted_t, tflops, strict=True)]
        rank_v = [np.searchsorted(row, v, side="left") for row, v in zip(self._sorted_v, vram, strict=True)]
        self._ranks = (np.stack(rank_t), np.stack(rank_v))

    def _weight_tables(self, weights: F64) -> F64:
        """Per kind, table[p, q] = weight of the shapes whose TFLOPS rank < p and VRAM rank < q,
        flattened (kind, p, q); empty for the per-slot path."""
        if self._ranks is None:
            return np.zeros(0)
        kinds, shapes = self._ranks[0].shape
        grid = np.zeros((kinds, shapes + 1, shapes + 1))
        for kind in range(kinds):
            np.add.at(grid[kind], (self._ranks[0][kind] + 1, self._ranks[1][kind] + 1), weights)
        tables: F64 = grid.cumsum(axis=1).cumsum(axis=2).ravel()
        return tables

    # ---- leftovers --------------------------------------------------------------------------
    def _lookup(self, kind_of: I64, free_t: I64, free_v: I64) -> I64:
        """Per slot (of the kinds `kind_of`) with these free amounts: its index into the tables."""
        if self._ranks is None:
            return np.zeros(free_t.size, dtype=np.int64)
        kinds, shapes = self._ranks[0].shape
        side = shapes + 1
        if kinds == 1:  # one kind (padding reads it too: its free part is 0)
            p = np.searchsorted(self._sorted_t[0], free_t, side="right")
            single: I64 = p * side + np.searchsorted(self._sorted_v[0], free_v, side="right")
            return single
        index = np.zeros(free_t.size, dtype=np.int64)
        for kind in range(kinds):
            here = np.flatnonzero(kind_of == kind)
            if here.size:
                p = np.searchsorted(self._sorted_t[kind], free_t[here], side="right")
                q = np.searchsorted(self._sorted_v[kind], free_v[here], side="right")
                index[here] = (kind * side + p) * side + q
        return index

    def _usable_per_slot(self, pick: Pick, free_t: I64, free_v: I64) -> F64:
        """W summed shape by shape (many kinds)."""
        assert self._per_slot is not None
        thr_t, thr_v = self._per_slot[0][:, pick], self._per_slot[1][:, pick]
        usable = np.zeros(free_t.size)
        for row, weight in enumerate(self._weights.tolist()):
            usable += weight * ((free_t >= thr_t[row]) & (free_v >= thr_v[row]))
        return usable

    def _fill(
        self, state: AllocatorState, shape: RequestShape | None, leftovers: _Leftovers, pick: Pick
    ) -> None:
        """Recompute `leftovers` at the slots `pick`, after one GPU of `shape` (None: before)."""
        free_t, free_v = state.avail_t[pick], state.avail_v[pick]
        if shape is not None:
            taken_t, taken_v = amounts_at(state, shape, pick)
            free_t, free_v = free_t - taken_t, free_v - taken_v
        part = np.maximum(free_t, 0) * self._scale[pick]
        index = self._lookup(self._kind_of[pick], free_t, free_v)
        usable = (
            self._usable_per_slot(pick, free_t, free_v) if self._per_slot is not None else self._tables[index]
        )
        leftovers.index[pick], leftovers.part[pick] = index, part
        leftovers.leftover[pick] = part * np.maximum(0.0, 1.0 - usable)

    def _new_leftovers(self, state: AllocatorState, shape: RequestShape | None) -> _Leftovers:
        size = state.cap_t.size
        leftovers = _Leftovers(
            np.zeros(size, dtype=np.int64),
            np.zeros(size),
            np.zeros(size),
            state.change_position,
            self._weights_version,
        )
        self._fill(state, shape, leftovers, slice(None))
        return leftovers

    def _refresh(
        self, state: AllocatorState, shape: RequestShape | None, leftovers: _Leftovers
    ) -> Pick | None:
        """Bring `leftovers` up to the state's change position and the current weights; the slots
        that were recomputed (a slice: all of them), or None."""
        everything: Pick | None = None
        if leftovers.weights_version != self._weights_version:  # same thresholds, new weights
            leftovers.weights_version = self._weights_version
            if self._per_slot is not None:
                self._fill(state, shape, leftovers, slice(None))
            else:
                leftovers.leftover = leftovers.part * np.maximum(0.0, 1.0 - self._tables[leftovers.index])
            everything = slice(None)
        changed = state.changes_since(leftovers.position)
        leftovers.position = state.change_position
        if changed is None:
            self._fill(state, shape, leftovers, slice(None))
            return slice(None)
        if changed:
            pick = np.array(changed, dtype=np.intp)
            self._fill(state, shape, leftovers, pick)
            return everything or pick
        return everything

    def _entry(self, state: AllocatorState, shape: RequestShape) -> _Entry | None:
        """The request GPU shape's entry, brought up to date; None before any request."""
        if self._demand(state) is None:
            return None
        if self._before is None:
            self._before = self._new_leftovers(state, None)
        else:
            self._refresh(state, None, self._before)
        before = self._before
        entry = self._entries.get(shape)
        if entry is None:
            if len(self._entries) >= self.cached_shapes:  # forget the oldest shape
                self._entries.pop(next(iter(self._entries)))
            after = self._new_leftovers(state, shape)
            rows, count = len(state.node_names), max(1, shape.gpu_count)
            entry = _Entry(
                after,
                after.leftover - before.leftover,
                np.zeros(rows),
                count,
                np.zeros(rows),
                np.zeros((rows, 2), dtype=np.intp),
            )
            self._entries[shape] = entry
            self._node_bests(state, entry, slice(None))
            return entry
        changed = self._refresh(state, shape, entry.after)
        if isinstance(changed, slice):
            entry.delta = entry.after.leftover - before.leftover
            self._node_bests(state, entry, changed)
        elif changed is not None:
            entry.delta[changed] = entry.after.leftover[changed] - before.leftover[changed]
            self._node_bests(state, entry, changed // state.width)
        return entry

    def _node_bests(self, state: AllocatorState, entry: _Entry, rows: Pick) -> None:
        """Per node of `rows`: the sum of its `count` smallest ΔL over its GPUs (∞ if too few)."""
        width = state.width
        delta = entry.delta.reshape(-1, width)[rows]
        valid = state.valid.reshape(-1, width)[rows]
        masked = np.where(valid, delta, np.inf)
        if entry.count == 1:
            entry.best[rows], entry.runner_up[rows], entry.columns[rows] = _two_smallest(masked)
        else:
            entry.best[rows] = _smallest(masked, entry.count)

    def leftover_deltas(self, state: AllocatorState, shape: RequestShape) -> F64:
        """ΔL (GPUs) of placing one GPU of `shape` on each slot, flat; zeros before any request."""
        entry = self._entry(state, shape.gpu_part())
        return np.zeros(state.cap_t.size) if entry is None else entry.delta

    # ---- node terms -------------------------------------------------------------------------
    def free_gpus(self, state: AllocatorState) -> F64:
        """G per node: free TFLOPS over capacity, summed over its GPUs (kept up to date by version)."""
        self._demand(state)
        changed = state.changes_since(self._free_position)
        self._free_position = state.change_position
        width = state.width
        if changed is None:
            free = (np.maximum(state.avail_t, 0) * self._scale).reshape(-1, width)
            self._free = np.round(free.sum(axis=1), DECIMALS)
        elif changed:
            rows = np.unique(np.array(changed, dtype=np.intp) // width)
            slots = (rows[:, None] * width + np.arange(width)).ravel()
            free = (np.maximum(state.avail_t[slots], 0) * self._scale[slots]).reshape(rows.size, width)
            self._free[rows] = np.round(free.sum(axis=1), DECIMALS)
        return self._free

    @staticmethod
    def _stranded(demand: Demand, gpus: F64, cpu: F64, memory: F64) -> F64:
        stranded = np.zeros_like(gpus)
        if demand.cpu_per_gpu > 0:
            stranded = np.maximum(stranded, gpus - cpu / demand.cpu_per_gpu)
        if demand.memory_per_gpu > 0:
            stranded = np.maximum(stranded, gpus - memory / demand.memory_per_gpu)
        return stranded

    def stranded_deltas(
        self, state: AllocatorState, demand: Demand, taken_gpus: F64, cpu: int, memory: int
    ) -> F64:
        """ΔS per node of taking `taken_gpus` GPUs, `cpu` and `memory` there (0 where unknown)."""
        known = (state.host_cpu < HOST_UNKNOWN) & (state.host_memory < HOST_UNKNOWN)
        if not known.any():
            return np.zeros(len(state.node_names))
        free = self.free_gpus(state)
        host_cpu = np.where(known, state.host_cpu, 0).astype(np.float64)
        host_memory = np.where(known, state.host_memory, 0).astype(np.float64)
        before = self._stranded(demand, free, host_cpu, host_memory)
        after = self._stranded(demand, free - taken_gpus, host_cpu - cpu, host_memory - memory)
        return np.where(known, np.round(after - before, DECIMALS), 0.0)

    def host_only_keys(self, state: AllocatorState, cpu_milli: int, memory: int) -> tuple[F64, F64]:
        """(ΔS, G) per node (rows) of a pod taking `cpu_milli` and `memory` bytes and no GPU."""
        demand = self._demand(state)
        free = self.free_gpus(state).copy()
        if demand is None:
            return np.zeros_like(free), free
        return self.stranded_deltas(state, demand, np.zeros_like(free), cpu_milli, memory), free

    # ---- decisions --------------------------------------------------------------------------
    def _keys(self, state: AllocatorState, alive: B, shape: RequestShape) -> tuple[F64, F64, F64 | None]:
        """(primary key per node, G per node, ΔL per slot as rows × width or None before any request)."""
        rows, width = alive.shape
        part = shape.gpu_part()
        count = max(1, part.gpu_count)
        entry = self._entry(state, part)
        alive_rows = row_any(alive)
        if entry is None:
            delta = None
            best = _smallest(np.where(alive, 0.0, np.inf), count)
        else:
            delta = entry.delta.reshape(rows, width)
            # One GPU: a node keeps its cached best while the filters left that GPU, else takes
            # its runner-up while they left that one; only nodes that lost both are read again.
            redo = np.zeros(0, dtype=np.intp)
            if count == 1:
                flat, starts = alive.ravel(), np.arange(0, rows * width, width)
                first, second = flat[starts + entry.columns[:, 0]], flat[starts + entry.columns[:, 1]]
                best = np.where(first, entry.best, np.where(second, entry.runner_up, np.inf))
                redo = np.flatnonzero(~first & ~second & alive_rows)
            if count > 1 or redo.size > rows // 4:
                best = _smallest(np.where(alive, delta, np.inf), count)
            elif redo.size:
                best[redo] = _smallest(np.where(alive[redo], delta[redo], np.inf), count)
        demand = self._demand(state)
        if demand is not None and state.host_free:
            amount_t, _ = shape_amounts(state, part)
            taken = np.minimum(amount_t * self._scale, 1.0).reshape(rows, width)
            valid = state.valid.reshape(rows, width)
            per_gpu = taken.sum(axis=1) / np.maximum(valid.sum(axis=1), 1)
            best = best + self.stranded_deltas(state, demand, count * per_gpu, shape.cpu_milli, shape.memory)
        primary = np.where(alive_rows & np.isfinite(best), np.round(best, DECIMALS), np.inf)
        return primary, self.free_gpus(state), delta

    def choose(self, state: AllocatorState, alive: B, shape: RequestShape) -> tuple[int, list[int]] | None:
        """The node row and slots BalancedFit picks among the surviving slots; None when none survived."""
        if not alive.any():
            return None
        primary, free, by_node = self._keys(state, alive, shape)
        lowest = primary.min()
        if not np.isfinite(lowest):
            return None
        candidates = primary == lowest
        fewest = np.where(candidates, self._node_gpus, np.inf)
        candidates &= fewest == fewest.min()
        least = np.where(candidates, free, np.inf)
        candidates &= least == least.min()
        if state.host_free:
            cpu = np.where(candidates, state.host_cpu, HOST_UNKNOWN + 1)
            candidates &= cpu == cpu.min()
        row = int(np.argmax(candidates))
        width = alive.shape[1]
        on_row = slice(row * width, (row + 1) * width)
        free_now = state.avail_t[on_row] * self._scale[on_row]  # the tightest first among equal ΔL
        on_node = np.zeros(width) if by_node is None else by_node[row]
        order = np.lexsort((np.arange(width), free_now, np.where(alive[row], on_node, np.inf)))
        return row, [row * width + int(c) for c in order[: max(1, shape.gpu_count)]]

    def node_scores(self, state: AllocatorState, alive: B, shape: RequestShape) -> F64:
        """0..100 per node (100 = the smallest primary key + (its GPUs + G ÷ (width + 1)) ÷ 1000
        among the candidates: the choice's order within a thousandth of a GPU); NaN when none of
        its GPUs fits."""
        if not alive.any():
            return np.full(alive.shape[0], np.nan)
        primary, free, _ = self._keys(state, alive, shape)
        finite = np.isfinite(primary)
        if not finite.any():
            return np.full(alive.shape[0], np.nan)
        tie = (self._node_gpus + free / (state.width + 1)) / 1000
        key = np.where(finite, primary + tie, np.inf)
        low, high = float(key[finite].min()), float(key[finite].max())
        spread = high - low
        scores = np.full(key.shape, 100.0) if spread <= 0 else 100.0 * (high - key) / spread
        return np.where(finite, scores, np.nan)


def _thresholds(state: AllocatorState, shape: RequestShape, pick: Pick) -> tuple[I64, I64]:
    """What a free GPU of `pick` must still have for one GPU of `shape` (never reached where its
    model is not the one the shape names)."""
    tflops, vram = shape_amounts(state, shape, pick)
    if shape.model:
        other = state.model_code[pick] != state.codes.get(shape.model, -1)
        never = np.int64(2**62)
        tflops, vram = np.where(other, never, tflops), np.where(other, never, vram)
    return tflops, vram


def _two_smallest(by_node: F64) -> tuple[F64, F64, npt.NDArray[np.intp]]:
    """Per row, its smallest and next smallest values and their columns (the lowest among equals),
    column by column (no per-row loop)."""
    rows, width = by_node.shape
    smallest, at = by_node[:, 0].copy(), np.zeros(rows, dtype=np.intp)
    second, second_at = np.full(rows, np.inf), np.zeros(rows, dtype=np.intp)
    for column in range(1, width):
        values = by_node[:, column]
        better = values < smallest
        runner_up = ~better & (values < second)
        second = np.where(better, smallest, np.where(runner_up, values, second))
        second_at = np.where(better, at, np.where(runner_up, column, second_at))
        smallest = np.where(better, values, smallest)
        at = np.where(better, column, at)
    return smallest, second, np.stack((at, second_at), axis=1)


def _smallest(by_node: F64, count: int) -> F64:
    """Per row, the sum of its `count` smallest values (∞ if it has fewer finite ones)."""
    rows, width = by_node.shape
    if count == 1:
        return np.asarray(by_node[np.arange(rows), np.argmin(by_node, axis=1)], dtype=np.float64)
    if count == 2:  # column by column, no per-row loop: the smallest and the next
        smallest = by_node[:, 0].copy()
        second = np.full(rows, np.inf)
        for column in range(1, width):
            np.minimum(second, np.maximum(smallest, by_node[:, column]), out=second)
            np.minimum(smallest, by_node[:, column], out=smallest)
        pair: F64 = smallest + second
        return pair
    total: F64 = np.sort(by_node, axis=1)[:, : min(count, width)].sum(axis=1)
    return total
