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

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
