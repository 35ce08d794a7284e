"""The NVML port over `nvidia-ml-py` (module `pynvml`): the agent's view of real GPUs.

Role: translate pynvml calls and errors into the port's records and `NvmlError` / `DeviceGone`
(NVML_ERROR_GPU_IS_LOST, NOT_FOUND → gone; "no samples" → an empty list; a hidden per-process
memory → None). Xid health comes from NVML's event API when the driver supports it: critical Xids
(48 double-bit ECC, 63/64 row remap, 74 NVLink, 79 fallen off the bus, 92–95) mark a device unhealthy.

Must not: be imported where no NVIDIA driver is expected (`pynvml` is imported inside `RealNvml`),
or decide anything from what it reads.
"""

from __future__ import annotations

import importlib
import threading
import time
from typing import Any

from gpupool_incluster.agent.nvml import DeviceGone, DeviceInfo, GpuProcess, NvmlError, UtilSample

__all__ = ["CRITICAL_XIDS", "RealNvml"]

# Xids after which NVIDIA documents that the GPU needs a reset or is unreachable (NVIDIA's Xid
# catalogue, "Xid Errors" in the GPU deployment and management documentation).
CRITICAL_XIDS = frozenset({48, 63, 64, 74, 79, 92, 94, 95})


class RealNvml:
    """NVML through pynvml; `nvmlInit` once, handles looked up by UUID on each call."""

    def __init__(self, module: Any = None) -> None:
        """`module` is pynvml (imported here when None); tests pass a stand-in with its names."""
        pynvml: Any = module
        if pynvml is None:
            try:
                pynvml = importlib.import_module("pynvml")
            except ImportError as exc:  # pragma: no cover - the agent extra installs it
                raise NvmlError("nvidia-ml-py is not installed (pip install 'gpupool[agent]')") from exc
        self._nvml: Any = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlError(f"NVML is unavailable: {exc}") from None
        self._lock = threading.Lock()
        self._xid: dict[str, str] = {}
        self._events: Any = None
        self._watch_xids()

    def _call(self, uuid: str, fn: Any, *args: Any) -> Any:
        nvml = self._nvml
        try:
            return fn(*args)
        except nvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in (nvml.NVML_ERROR_GPU_IS_LOST, nvml.NVML_ERROR_NOT_FOUND):
                raise DeviceGone(uuid, str(exc)) from None
            raise NvmlError(f"GPU {uuid}: {exc}") from None

    def _handle(self, uuid: str) -> Any:
        return self._call(uuid, self._nvml.nvmlDeviceGetHandleByUUID, uuid)

    def _watch_xids(self) -> None:
        nvml = self._nvml
        try:
            self._events = nvml.nvmlEventSetCreate()
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, self._events)
        except nvml.NVMLError:
            self._events = None  # some drivers (vGPU, MIG) refuse: health falls back to GPU_IS_LOST

    def _drain_xids(self) -> None:
        nvml = self._nvml
        while self._events is not None:
            try:
                event = nvml.nvmlEventSetWait_v2(self._events, 0)
            except nvml.NVMLError:
                return  # timeout: nothing pending
            xid = int(event.eventData)
            if xid in CRITICAL_XIDS:
                uuid = nvml.nvmlDeviceGetUUID(event.device)
                with self._lock:
                    self._xid[uuid] = f"Xid {xid}"

    def driver_version(self) -> str:
        try:
            return str(self._nvml.nvmlSystemGetDriverVersion())
        except self._nvml.NVMLError:
            return ""

    def devices(self) -> list[DeviceInfo]:
        nvml = self._nvml
        found = []
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as exc:
            raise NvmlError(f"NVML device count: {exc}") from None
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                uuid = str(nvml.nvmlDeviceGetUUID(handle))
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                pci = nvml.nvmlDeviceGetPciInfo(handle)
            except nvml.NVMLError:
                continue  # lost while listing: absent, as the port promises
            found.append(
                DeviceInfo(
                    uuid=uuid,
                    index=index,
                    name=str(nvml.nvmlDeviceGetName(handle)),
                    memory_total=int(memory.total),
                    numa_node=self._numa(handle),
                    pci_bus_id=str(pci.busId),
                )
            )
        return found

    def _numa(self, handle: Any) -> int | None:
        try:
            return int(self._nvml.nvmlDeviceGetNumaNodeId(handle))
        except (self._nvml.NVMLError, AttributeError):
            return None

    def health(self, uuid: str) -> str | None:
        self._drain_xids()
        try:
            self._handle(uuid)
        except DeviceGone as gone:
            return gone.reason
        with self._lock:
            return self._xid.get(uuid)

    def compute_processes(self, uuid: str) -> list[GpuProcess]:
        handle = self._handle(uuid)
        found = self._call(uuid, self._nvml.nvmlDeviceGetComputeRunningProcesses, handle)
        return [GpuProcess(pid=int(p.pid), used_memory=_memory(p.usedGpuMemory)) for p in found]

    def process_utilization(self, uuid: str, since_us: int) -> list[UtilSample]:
        nvml = self._nvml
        handle = self._handle(uuid)
        try:
            samples = nvml.nvmlDeviceGetProcessUtilization(handle, since_us)
        except nvml.NVMLError as exc:
            if getattr(exc, "value", None) == nvml.NVML_ERROR_NOT_FOUND:
                return []  # "no samples since": not a lost device for this call
            raise NvmlError(f"GPU {uuid}: {exc}") from None
        return [UtilSample(int(s.pid), int(s.timeStamp), float(s.smUtil)) for s in samples]

    def close(self) -> None:
        _shutdown(self._nvml)

    def now_us(self) -> int:
        return time.time_ns() // 1000  # NVML stamps samples in host microseconds since the epoch


def _memory(value: Any) -> int | None:
    return None if value is None else int(value)


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except (nvml.NVMLError, AttributeError):
        return
