"""The agent's port to NVML: the few device and process queries discovery and enforcement need.

Role: `Nvml` (the capability), the records it returns (`DeviceInfo`, `GpuProcess`,
`UtilSample`) and its errors. `nvml_real` implements it over `nvidia-ml-py`; `nvml_fake`
simulates GPUs whose processes are real OS processes.

Must not: implement anything, or know about pods, limits or Kubernetes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["DeviceGone", "DeviceInfo", "GpuProcess", "Nvml", "NvmlError", "UtilSample"]


class NvmlError(Exception):
    """NVML failed for a reason that is not about one device (library missing, driver down)."""


class DeviceGone(NvmlError):
    """The device fell off the bus, reported an Xid that needs a reset, or is no longer listed."""

    def __init__(self, uuid: str, reason: str) -> None:
        super().__init__(f"GPU {uuid}: {reason}")
        self.uuid = uuid
        self.reason = reason


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One GPU as NVML describes it."""

    uuid: str
    index: int
    name: str  # NVML's product name, e.g. "NVIDIA A100-SXM4-40GB"
    memory_total: int  # bytes
    numa_node: int | None = None
    pci_bus_id: str = ""


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process with a compute context on a GPU; `used_memory` is None when NVML hides it."""

    pid: int
    used_memory: int | None


@dataclass(frozen=True, slots=True)
class UtilSample:
    """One per-process utilisation sample: SM percent (0–100) at `timestamp_us` (NVML's clock)."""

    pid: int
    timestamp_us: int
    sm_percent: float


class Nvml(Protocol):
    """NVML, reduced to the agent's needs. Every method may raise `NvmlError`."""

    def driver_version(self) -> str:
        """The driver's version string ("" when unknown)."""
        ...

    def devices(self) -> list[DeviceInfo]:
        """Every GPU the driver lists now, by index; a device that is gone is absent."""
        ...

    def health(self, uuid: str) -> str | None:
        """None when the device is healthy, else why not (an Xid, fallen off the bus)."""
        ...

    def compute_processes(self, uuid: str) -> list[GpuProcess]:
        """Processes with a compute context on the device. Raises `DeviceGone`."""
        ...

    def process_utilization(self, uuid: str, since_us: int) -> list[UtilSample]:
        """Per-process SM samples newer than `since_us` (empty when there are none). Raises `DeviceGone`."""
        ...

    def now_us(self) -> int:
        """NVML's sample clock now, in microseconds (to pass back as `since_us`)."""
        ...

    def close(self) -> None:
        """Release NVML (the agent is exiting)."""
        ...
