"""FragmentationAware with CPU and memory: a node that cannot host a shape wastes all its free GPUs.

Role: when the allocator is told what CPU and memory nodes have left (`set_host_free`), each mix
entry m (a GPU shape g plus CPU and memory) can run on node n only while n has that CPU and
memory. Then, per slot s of node n, for one pod with GPU shape r and its own CPU and memory:
- m could not run on n before: Δ_m = −(GPU capacity the pod takes at s) — all free was lost anyway;
- m could run before and still can: Δ_m is the GPU-only Δ of g (cached per shape, see `fragmentation`);
- m could run before but not after: Δ_m = (n's free GPUs after) − (n's GPU-only fragmentation for g).
Summed with the mix's weights, grouped by GPU shape so the cost is (GPU shapes × slots), not
(mix entries × slots).

The GPU-only "before" terms per node (`GpuBefore`) are kept between decisions and refreshed for
the nodes whose GPUs changed; the CPU and memory terms change with every placement and are
computed per decision, over (nodes × mix entries), which is small.

Must not: mutate the allocator's state, or do I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.mix import RequestShape, gpu_part
from gpupool.core.allocator.state import AllocatorState

__all__ = ["GpuBefore", "host_deltas", "host_only_deltas"]

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _NodeTerms:
    total_b: F32  # (nodes,) free GPU capacity, in GPUs
    still: F32  # (GPU shapes, nodes) mix weight that can still run there after the pod
    never: F32  # (nodes,) mix weight that could not run there before
    lost_total: F32  # (nodes,) mix weight the pod's CPU or memory pushes off the node
    lost_frag: F32  # (nodes,) Σ over that weight of the node's GPU-only fragmentation before


@dataclass(frozen=True, slots=True)
class _Entries:
    """The mix's entries sorted by GPU shape: their CPU, memory and weight, and where each GPU
    shape's run of entries starts (for sums per GPU shape without a matrix product)."""

    cpu: I64
    memory: I64
    weights: F32
    starts: npt.NDArray[np.intp]

    @classmethod
    def of(
        cls, weighted: Sequence[tuple[RequestShape, float]], gpu_shapes: Sequence[RequestShape]
    ) -> _Entries:
        column = {g: i for i, g in enumerate(gpu_shapes)}
        columns = [column[gpu_part(m)] for m, _ in weighted]
        order = sorted(range(len(weighted)), key=lambda i: columns[i])  # stable: mix order within a shape
        sorted_columns = np.array([columns[i] for i in order], dtype=np.intp)
        if not np.array_equal(np.unique(sorted_columns), np.arange(len(gpu_shapes))):
            raise ValueError("every GPU shape of the mix needs at least one mix entry")
        return cls(
            cpu=np.array([weighted[i][0].cpu_milli for i in order], dtype=np.int64),
            memory=np.array([weighted[i][0].memory for i in order], dtype=np.int64),
            weights=np.array([weighted[i][1] for i in order], dtype=np.float32),
            starts=np.searchsorted(sorted_columns, np.arange(len(gpu_shapes))).astype(np.intp),
        )


class GpuBefore:
    """Per node, before the next pod: its free GPU capacity and, per GPU shape of the mix, its
    GPU-only fragmentation. Kept between decisions; the rows of nodes whose GPUs changed are
    recomputed (the scorer passes them from the state's change journal), all of them when the
    layout or the mix's GPU shapes change.
    """

    def __init__(self) -> None:
        self.key: object = None
        self.total_b: F32 = np.zeros(0, dtype=np.float32)
        self.gpu_frag_b: F32 = np.zeros((0, 0), dtype=np.float32)  # (GPU shapes, nodes)

    def refresh(
        self,
        state: AllocatorState,
        key: object,
        gpu_shapes: Sequence[RequestShape],
        thresholds: tuple[I64, I64],
        rows: set[int] | None,
    ) -> None:
        """Bring the terms up to date: `rows` changed since the last call (None: unknown, all)."""
        width, count = state.width, len(gpu_shapes)
        if key != self.key or rows is None:
            self.key = key
            picked = np.arange(len(state.node_names), dtype=np.intp)
            self.total_b = np.zeros(picked.size, dtype=np.float32)
            self.gpu_frag_b = np.zeros((count, picked.size), dtype=np.float32)
        elif rows:
            picked = np.fromiter(sorted(rows), dtype=np.intp, count=len(rows))
        else:
            return
        pick = (picked[:, None] * width + np.arange(width)).ravel()
        ones = np.ones(width, dtype=np.float32)  # row sums as products (see `rows`)
        free_b = _free(state, pick=pick)
        total_b = free_b.reshape(picked.size, width) @ ones
        thr_t, thr_v = thresholds
        avail_t, avail_v = state.avail_t[pick], state.avail_v[pick]
        fit_b = (avail_t >= thr_t.take(pick, axis=1)) & (avail_v >= thr_v.take(pick, axis=1))  # C order
        words = np.bitwise_count(fit_b.view(np.uint64))  # width is a multiple of 8: whole words per node
        fits = words.reshape(count, picked.size, width // 8).sum(axis=2, dtype=np.int64)
        used = ((free_b * fit_b).reshape(-1, width) @ ones).reshape(count, picked.size)
        needs = np.array([g.gpu_count for g in gpu_shapes], dtype=np.int64).reshape(count, 1)
        self.total_b[picked] = total_b
        self.gpu_frag_b[:, picked] = np.where(fits >= needs, total_b - used, total_b)


def _node_terms(
    state: AllocatorState, request: RequestShape, before: GpuBefore, entries: _Entries
) -> _NodeTerms:
    """Per node: which mix entries its CPU and memory host before and after the pod, weighed.

    Laid out (mix entries × nodes) so that sums per GPU shape are runs of rows (`reduceat`).
    """
    cpu, memory, weights = entries.cpu[:, None], entries.memory[:, None], entries.weights[:, None]
    room_b = (state.host_cpu >= cpu) & (state.host_memory >= memory)
    room_a = ((state.host_cpu - request.cpu_milli) >= cpu) & ((state.host_memory - request.memory) >= memory)
    lost = np.add.reduceat((room_b & ~room_a) * weights, entries.starts, axis=0)  # (GPU shapes, nodes)
    return _NodeTerms(
        total_b=before.total_b,
        still=np.add.reduceat(room_a * weights, entries.starts, axis=0),
        never=((~room_b) * weights).sum(axis=0, dtype=np.float32),
        lost_total=lost.sum(axis=0, dtype=np.float32),
        lost_frag=(lost * before.gpu_frag_b).sum(axis=0, dtype=np.float32),
    )


def _free(
    state: AllocatorState, taken_t: I64 | int = 0, *, pick: slice | npt.NDArray[np.intp] = slice(None)
) -> F32:
    cap_t = state.cap_t[pick]
    scale = np.where(state.valid[pick] & (cap_t > 0), 1.0 / np.maximum(cap_t, 1), 0.0)
    free: F32 = (np.maximum(state.avail_t[pick] - taken_t, 0) * scale).astype(np.float32)
    return free


def host_deltas(
    state: AllocatorState,
    request: RequestShape,
    request_amount_t: I64,
    weighted: Sequence[tuple[RequestShape, float]],
    gpu_shapes: Sequence[RequestShape],
    parts: F32,
    before: GpuBefore,
) -> F32:
    """Δ expected fragmentation per slot (flat), CPU and memory of nodes and mix included."""
    width, rows = state.width, len(state.node_names)
    free_b = _free(state)
    taken = (free_b - _free(state, request_amount_t)).reshape(rows, width)
    terms = _node_terms(state, request, before, _Entries.of(weighted, gpu_shapes))
    stays = np.einsum("grw,gr->rw", parts.reshape(len(gpu_shapes), rows, width), terms.still)
    delta = (
        stays
        - taken * terms.never[:, None]
        + (terms.total_b[:, None] - taken) * terms.lost_total[:, None]
        - terms.lost_frag[:, None]
    )
    rounded: F32 = np.round(delta.astype(np.float32).ravel(), 5)
    return rounded


def host_only_deltas(
    state: AllocatorState,
    request: RequestShape,
    weighted: Sequence[tuple[RequestShape, float]],
    gpu_shapes: Sequence[RequestShape],
    before: GpuBefore,
) -> F32:
    """Δ expected fragmentation per node of a pod that takes CPU and memory but no GPU."""
    terms = _node_terms(state, request, before, _Entries.of(weighted, gpu_shapes))
    rounded: F32 = np.round(terms.total_b * terms.lost_total - terms.lost_frag, 5)
    return rounded
