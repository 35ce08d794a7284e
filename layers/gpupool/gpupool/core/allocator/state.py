"""The allocator's mutable state: GPU records, allocations, node facts, and the arrays the filters scan.

Role: keeps, for every GPU, physical capacity, what is still free (capacity − requests of the
pods holding it − use we did not place), the sum of limits placed on it (for oversubscription
bounds), its worker count, its two scores and its tenancy records, as numpy arrays laid out node
by node (nodes sorted by name, one row per node, `width` columns of GPU slots; `_empty_arrays`
declares every column in one place). Beside the GPUs it keeps what it knows of each node: the
Node's labels (node affinity), host memory and disk (VRAM expansion), CPU and memory left for
pods (FragmentationAware's and BalancedFit's host terms, the simulator) and pods holding native
`nvidia.com/gpu` (progressive migration), mirrored into per-node arrays. Which slots' free
capacity changed is journaled twice: `take_changed_slots` (one reader, FragmentationAware) and
`changes_since` (any number of readers, BalancedFit). Layout changes (a GPU added, removed or
moved, a node's labels or host memory and disk) rebuild the arrays lazily; everything else
updates a few cells in place, so a reservation costs O(GPUs of the pod), not O(cluster).

One class on purpose: the slot arrays, the per-node arrays and the records are one invariant
(every array cell mirrors the records under the current layout), and the filters read the arrays
as direct attributes in their inner loops.

Must not: decide placement (see `filters`, `scoring`, `allocator`), lock, log or do I/O. Not
thread-safe: callers serialise access.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.limits import UNBOUNDED as UNBOUNDED_LIMIT
from gpupool.core.allocator.limits import limit_caps
from gpupool.core.allocator.records import RUNNING, Allocation, GpuInfo
from gpupool.core.allocator.request import Oversubscription
from gpupool.core.allocator.tenancy import Tenancy

__all__ = ["UNBOUNDED", "AllocatorState"]

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F32 = npt.NDArray[np.float32]
B = npt.NDArray[np.bool_]

UNBOUNDED = np.int64(UNBOUNDED_LIMIT)
MAX_TRACKED_CHANGES = 4096
MAX_LOGGED_CHANGES = 65_536
HOST_UNKNOWN = 2**62  # CPU or memory left on a node nobody told us about: never short


class AllocatorState:
    """GPU records, allocations and node facts, mirrored into per-slot and per-node arrays."""

    def __init__(self, *, vram_weight: float = 0.7, tflops_weight: float = 0.3) -> None:
        self.vram_weight = vram_weight
        self.tflops_weight = tflops_weight
        self.gpus: dict[str, GpuInfo] = {}
        self.allocations: dict[str, Allocation] = {}
        self.oversubscription: dict[str, Oversubscription] = {}
        self.node_labels: dict[str, dict[str, str]] = {}
        self.node_host: dict[str, tuple[int, int]] = {}
        self.native_gpu_pods: dict[str, int] = {}
        # Use a GPU reports that no allocation of ours explains (another scheduler, the device
        # plugin, a lagging agent), measured when its status arrives: capacity − placed − available.
        self.external: dict[str, tuple[int, int]] = {}
        self._pending_external: set[str] = set()
        self._dirty = True
        self.codes: dict[str, int] = {"": 0}
        self.node_names: list[str] = []
        self.node_index: dict[str, int] = {}
        self.slot_of: dict[str, int] = {}
        self.slot_names: list[str] = []
        self.width = 8
        self.generation = 0
        # Node-affinity masks per constraint for the current generation (see filters).
        self.affinity_masks: dict[object, object] = {}
        # Pool/phase/model/vendor masks per request kind for the current static version (see filters).
        self.static_masks: dict[object, object] = {}
        self._empty_arrays()
        self._empty_placed()
        self.node_workers: I32 = np.zeros(0, dtype=np.int32)
        self.node_native: I32 = np.zeros(0, dtype=np.int32)
        # CPU (milli) and memory (bytes) a node has left for pods, when told (the simulator);
        # FragmentationAware then counts a node that can no longer host a request as fragmented.
        self.host_free: dict[str, tuple[int, int]] = {}
        self.host_cpu: I64 = np.zeros(0, dtype=np.int64)
        self.host_memory: I64 = np.zeros(0, dtype=np.int64)
        # Slots whose free capacity changed since a cache last read them (see `take_changed_slots`),
        # and a counter bumped whenever capacities, models or the layout change.
        self.changed_slots: list[int] = []
        self.changes_overflowed = False
        self.static_version = 0
        # The same changes for any number of readers (BalancedFit): slots in the order their free
        # capacity changed; a reader keeps the position it read up to (see `changes_since`).
        self.change_log: list[int] = []
        self.change_base = 0

    # ---- the per-slot columns --------------------------------------------------------------
    def _empty_arrays(self, size: int = 0) -> None:
        """(Re)allocate every per-slot column, zeroed, for `size` slots."""
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

    # ---- layout ----------------------------------------------------------------------------
    def code(self, text: str) -> int:
        """A small integer for a pool, model or vendor name (0 = empty)."""
        found = self.codes.get(text)
        if found is None:
            found = self.codes[text] = len(self.codes)
        return found

    def ensure_layout(self) -> None:
        """Rebuild the arrays if GPUs were added, removed or moved since the last build."""
        if not self._dirty:
            return
        by_node: dict[str, list[GpuInfo]] = {}
        for gpu in self.gpus.values():
            by_node.setdefault(gpu.node, []).append(gpu)
        self.node_names = sorted(by_node)
        self.node_index = {name: i for i, name in enumerate(self.node_names)}
        # Padded to a multiple of 8 slots so per-node reductions can use a byte view (see rows).
        widest = max((len(v) for v in by_node.values()), default=1)
        self.width = -(-widest // 8) * 8
        size = len(self.node_names) * self.width
        self._empty_arrays(size)
        self._empty_placed()
        self.slot_of = {}
        self.slot_names = [""] * size
        self.node_workers = np.zeros(len(self.node_names), dtype=np.int32)
        self.node_native = np.zeros(len(self.node_names), dtype=np.int32)
        for row, node in enumerate(self.node_names):
            ordered = sorted(by_node[node], key=lambda g: (g.index, g.name))
            for column, gpu in enumerate(ordered):
                slot = row * self.width + column
                self.slot_of[gpu.name] = slot
                self.slot_names[slot] = gpu.name
                self._write_static(slot, gpu, sharing=len(ordered))
            self.node_native[row] = self.native_gpu_pods.get(node, 0)
        rooms = [self.host_free.get(node, (HOST_UNKNOWN, HOST_UNKNOWN)) for node in self.node_names]
        self.host_cpu = np.array([r[0] for r in rooms], dtype=np.int64).reshape(-1)
        self.host_memory = np.array([r[1] for r in rooms], dtype=np.int64).reshape(-1)
        for allocation in self.allocations.values():
            self._apply(allocation, sign=1)
        self._refresh_all()
        self._dirty = False
        self.generation += 1

    def _write_static(self, slot: int, gpu: GpuInfo, *, sharing: int) -> None:
        self.static_version += 1
        self.valid[slot] = True
        self.pool_code[slot] = self.code(gpu.pool)
        self.model_code[slot] = self.code(gpu.model)
        self.vendor_code[slot] = self.code(gpu.vendor)
        self.phase_ok[slot] = gpu.phase == RUNNING
        self.gpu_index[slot] = gpu.index
        self.cap_t[slot] = gpu.tflops_capacity
        self.cap_v[slot] = gpu.vram_capacity
        self.tenancy.write_static(slot, gpu)
        self._write_limit_caps(slot, gpu, sharing)

    def _write_limit_caps(self, slot: int, gpu: GpuInfo, sharing: int) -> None:
        policy, host = self.oversubscription.get(gpu.pool), self.node_host.get(gpu.node)
        self.limit_cap_t[slot], self.limit_cap_v[slot] = limit_caps(gpu, policy, host, sharing)
        self.limit_room_t[slot] = self.limit_cap_t[slot] - self.limits_t[slot]
        self.limit_room_v[slot] = self.limit_cap_v[slot] - self.limits_v[slot]

    def _refresh_available(self, slot: int) -> None:
        """available = capacity − requests we placed − use we did not place."""
        name = self.slot_names[slot]
        if name in self._pending_external:
            self._measure_external(slot)
        external_t, external_v = self.external.get(name, (0, 0))
        self.avail_t[slot] = int(self.cap_t[slot]) - int(self._placed_t[slot]) - external_t
        self.avail_v[slot] = int(self.cap_v[slot]) - int(self._placed_v[slot]) - external_v
        self._rescore(slot)
        self.change_log.append(slot)
        if len(self.change_log) > MAX_LOGGED_CHANGES:
            half = len(self.change_log) // 2
            del self.change_log[:half]
            self.change_base += half
        if len(self.changed_slots) < MAX_TRACKED_CHANGES:
            self.changed_slots.append(slot)
        else:
            self.changes_overflowed = True

    @property
    def change_position(self) -> int:
        """The position after the last logged change (what a reader that is up to date holds)."""
        return self.change_base + len(self.change_log)

    def changes_since(self, position: int) -> list[int] | None:
        """Slots whose free capacity changed since `position` (repeats possible); None when that is
        too long ago (or everything changed): read every slot again."""
        if position < self.change_base:
            return None
        return self.change_log[position - self.change_base :]

    def take_changed_slots(self) -> list[int] | None:
        """Slots whose free capacity changed since the last call; None when too many to list."""
        changed, overflowed = self.changed_slots, self.changes_overflowed
        self.changed_slots, self.changes_overflowed = [], False
        return None if overflowed else changed

    def _measure_external(self, slot: int) -> None:
        name = self.slot_names[slot]
        gpu = self.gpus[name]
        self._pending_external.discard(name)
        unexplained_t = int(self.cap_t[slot]) - int(self._placed_t[slot]) - (gpu.tflops_available or 0)
        unexplained_v = int(self.cap_v[slot]) - int(self._placed_v[slot]) - (gpu.vram_available or 0)
        self.external[name] = (
            max(0, unexplained_t) if gpu.tflops_available is not None else 0,
            max(0, unexplained_v) if gpu.vram_available is not None else 0,
        )

    def _refresh_all(self) -> None:
        """Vectorised `_refresh_available` for every slot, used after a re-layout."""
        for name in list(self._pending_external):
            slot = self.slot_of.get(name)
            if slot is None:
                self._pending_external.discard(name)
            else:
                self._measure_external(slot)
        free_t = self.cap_t - self._placed_t
        free_v = self.cap_v - self._placed_v
        for name, (external_t, external_v) in self.external.items():
            slot = self.slot_of.get(name)
            if slot is not None:
                free_t[slot] -= external_t
                free_v[slot] -= external_v
        self.avail_t[:] = free_t
        self.avail_v[:] = free_v
        self.change_base += len(self.change_log) + 1  # every slot changed: readers start again
        self.change_log.clear()
        with np.errstate(divide="ignore", invalid="ignore"):
            used_t = np.where(self.cap_t > 0, 1.0 - self.avail_t / np.maximum(self.cap_t, 1), 1.0)
            used_v = np.where(self.cap_v > 0, 1.0 - self.avail_v / np.maximum(self.cap_v, 1), 1.0)
        used = 100.0 * (self.vram_weight * used_v + self.tflops_weight * used_t)
        free = 100.0 * (self.vram_weight * (1.0 - used_v) + self.tflops_weight * (1.0 - used_t))
        self.score_compact[:] = np.clip(np.floor(used + 0.5), 0.0, 100.0)
        self.score_low_load[:] = np.clip(np.floor(free + 0.5), 0.0, 100.0)

    def _rescore(self, slot: int) -> None:
        cap_t, cap_v = int(self.cap_t[slot]), int(self.cap_v[slot])
        used_t = 1.0 - int(self.avail_t[slot]) / cap_t if cap_t > 0 else 1.0
        used_v = 1.0 - int(self.avail_v[slot]) / cap_v if cap_v > 0 else 1.0
        used = 100.0 * (self.vram_weight * used_v + self.tflops_weight * used_t)
        free = 100.0 * (self.vram_weight * (1.0 - used_v) + self.tflops_weight * (1.0 - used_t))
        # Go's math.Round: half away from zero; scores are clamped to 0..100.
        self.score_compact[slot] = min(100.0, max(0.0, math.floor(used + 0.5)))
        self.score_low_load[slot] = min(100.0, max(0.0, math.floor(free + 0.5)))

    # ---- placed requests, kept in the same layout ------------------------------------------
    def _empty_placed(self) -> None:
        self._placed_t = np.zeros(self.valid.size, dtype=np.int64)
        self._placed_v = np.zeros(self.valid.size, dtype=np.int64)

    def _apply(self, allocation: Allocation, *, sign: int) -> None:
        if self._placed_t.size != self.valid.size:
            self._empty_placed()
        row = self.node_index.get(allocation.node)
        for position, name in enumerate(allocation.gpus):
            slot = self.slot_of.get(name)
            if slot is None:
                continue
            self._placed_t[slot] += sign * allocation.tflops_requests[position]
            self._placed_v[slot] += sign * allocation.vram_at(position)
            limit_t = sign * allocation.tflops_limits[position]
            limit_v = sign * allocation.vram_limit_at(position)
            self.limits_t[slot] += limit_t
            self.limits_v[slot] += limit_v
            self.limit_room_t[slot] -= limit_t
            self.limit_room_v[slot] -= limit_v
            self.workers[slot] += sign
            self.tenancy.apply(slot, allocation, sign)
            if not self._dirty:
                self._refresh_available(slot)
        if row is not None:
            self.node_workers[row] += sign

    # ---- node facts ------------------------------------------------------------------------
    def set_node(
        self, node: str, labels: Mapping[str, str], *, host_memory: int = 0, host_disk: int = 0
    ) -> None:
        """Labels (for node affinity) and host memory/disk (for VRAM expansion) from the Node."""
        self.node_labels[node] = dict(labels)
        if host_memory or host_disk:
            self.node_host[node] = (host_memory, host_disk)
        self._dirty = True

    def set_host_free(self, node: str, cpu_milli: int, memory: int) -> None:
        """CPU (milli) and memory (bytes) `node` has left for pods."""
        self.host_free[node] = (cpu_milli, memory)
        row = self.node_index.get(node)
        if row is not None and not self._dirty:
            self.host_cpu[row], self.host_memory[row] = cpu_milli, memory

    def clear_host_free(self, node: str) -> None:
        """Forget what `node` has left: unknown again, never short."""
        self.host_free.pop(node, None)
        row = self.node_index.get(node)
        if row is not None and not self._dirty:
            self.host_cpu[row], self.host_memory[row] = HOST_UNKNOWN, HOST_UNKNOWN

    def set_native_gpu_pods(self, node: str, count: int) -> None:
        """Pods on `node` holding native nvidia.com/gpu (progressive migration)."""
        if count:
            self.native_gpu_pods[node] = count
        else:
            self.native_gpu_pods.pop(node, None)
        row = self.node_index.get(node)
        if row is not None and not self._dirty:
            self.node_native[row] = count

    def labels_of(self, node: str) -> dict[str, str]:
        """Node labels: those GPU objects carry in status.nodeSelector, overlaid by the Node's own."""
        merged: dict[str, str] = {"kubernetes.io/hostname": node}
        previous: tuple[tuple[str, str], ...] | None = None
        for name in self.gpu_names_on(node):
            labels = self.gpus[name].node_labels
            if labels != previous:  # the GPUs of a node mostly carry the same labels: merge them once
                merged.update(labels)
                previous = labels
        merged.update(self.node_labels.get(node, {}))
        return merged

    def gpu_names_on(self, node: str) -> Iterable[str]:
        row = self.node_index.get(node)
        if row is None:
            return ()
        start = row * self.width
        return [n for n in self.slot_names[start : start + self.width] if n]

    # ---- mutations -------------------------------------------------------------------------
    def upsert_gpu(self, gpu: GpuInfo) -> None:
        """Add or update one GPU; a new GPU, or one that moved node or pool, triggers a re-layout."""
        old = self.gpus.get(gpu.name)
        self.gpus[gpu.name] = gpu
        self._pending_external.add(gpu.name)
        if old is None or old.node != gpu.node or old.pool != gpu.pool or self._dirty:
            self._dirty = True
            return
        slot = self.slot_of[gpu.name]
        self._write_static(slot, gpu, sharing=len(list(self.gpu_names_on(gpu.node))))
        self._refresh_available(slot)
        if old.node_labels != gpu.node_labels:
            self.generation += 1

    def remove_gpu(self, name: str) -> None:
        if self.gpus.pop(name, None) is not None:
            self.external.pop(name, None)
            self._pending_external.discard(name)
            self._dirty = True

    def set_oversubscription(self, pool: str, policy: Oversubscription | None) -> None:
        if policy is None:
            self.oversubscription.pop(pool, None)
        else:
            self.oversubscription[pool] = policy
        self._dirty = True

    def add_allocation(self, allocation: Allocation) -> None:
        """Record an allocation (a reservation, or one read back from a pod's annotations).

        While a re-layout is pending the record is only stored: the layout applies every
        allocation before it measures GPUs' unexplained use, so a rebuild never counts a pod twice.
        """
        previous = self.allocations.pop(allocation.key, None)
        if previous is not None and not self._dirty:
            self._apply(previous, sign=-1)
        self.allocations[allocation.key] = allocation
        if not self._dirty:
            self._apply(allocation, sign=1)

    def remove_allocation(self, key: str) -> Allocation | None:
        allocation = self.allocations.pop(key, None)
        if allocation is not None and not self._dirty:
            self._apply(allocation, sign=-1)
        return allocation
