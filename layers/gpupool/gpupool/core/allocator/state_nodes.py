"""The allocator state's node-level facts: labels, host figures, native GPU pods.

Role: `NodeFacts` holds what the allocator knows of each node beyond its GPUs — the Node's labels
(node affinity), host memory and disk (VRAM expansion), CPU and memory left for pods
(FragmentationAware's host terms, the simulator), and pods holding native `nvidia.com/gpu` —
and answers `labels_of(node)` and `gpu_names_on(node)`. Setters write through to the per-node
arrays when the layout is current; label and host changes mark it for a rebuild.

Must not: decide placement or touch GPU slots' capacities (`gpupool.core.allocator.state`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpupool.core.allocator.records import GpuInfo
from gpupool.core.allocator.state_arrays import I32, I64

__all__ = ["NodeFacts"]


class NodeFacts:
    """Node-level facts, mixed into `AllocatorState` (which owns the attributes declared here)."""

    gpus: dict[str, GpuInfo]
    node_labels: dict[str, dict[str, str]]
    node_host: dict[str, tuple[int, int]]
    native_gpu_pods: dict[str, int]
    host_free: dict[str, tuple[int, int]]
    host_cpu: I64
    host_memory: I64
    node_native: I32
    node_index: dict[str, int]
    slot_names: list[str]
    width: int
    _dirty: bool

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
