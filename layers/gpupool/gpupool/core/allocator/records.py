"""The allocator's source records: one GPU as the allocator sees it, and one pod's allocation.

Role: immutable inputs and outputs in internal units (milli-TFLOPS, bytes). `GpuInfo` is built
from a GPU object (see `build`); `Allocation` is what a reservation produced or what a pod's
annotations say it holds.

Must not: hold mutable state or do arithmetic on capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Allocation", "GpuInfo"]

RUNNING = "Running"


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One GPU object (`tensor-fusion.ai/v1` GPU), reduced to what placement needs."""

    name: str
    node: str
    pool: str
    tflops_capacity: int
    vram_capacity: int
    phase: str = RUNNING
    model: str = ""
    vendor: str = ""
    index: int = 0
    tflops_available: int | None = None
    vram_available: int | None = None
    node_labels: tuple[tuple[str, str], ...] = ()
    # status.isolationMode ("" = any) and whether the GPU reports partitions (isolationMode
    # partitioned, or status.allocatedPartitions present): inputs of the isolation stages.
    isolation_mode: str = ""
    partitions: bool = False


@dataclass(frozen=True, slots=True)
class Allocation:
    """GPUs held by one pod; TFLOPS per GPU (a compute percentage differs per GPU model)."""

    namespace: str
    name: str
    node: str
    gpus: tuple[str, ...]
    tflops_requests: tuple[int, ...]
    tflops_limits: tuple[int, ...]
    vram_request: int
    vram_limit: int
    uid: str = ""
    isolation: str = "soft"
    dedicated: bool = False
    # Per GPU when they differ (a dedicated worker holds each GPU's whole VRAM, request and
    # limit alike); empty when every GPU gets `vram_request` / `vram_limit`.
    vram_requests: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def vram_at(self, position: int) -> int:
        """VRAM requested on the `position`-th GPU of `gpus`."""
        return self.vram_requests[position] if self.vram_requests else self.vram_request

    def vram_limit_at(self, position: int) -> int:
        return self.vram_requests[position] if self.vram_requests else self.vram_limit
