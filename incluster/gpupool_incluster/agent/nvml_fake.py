"""A simulated NVML whose GPU processes are real OS processes (`--nvml fake:FILE`).

Role: GPUs, their health and which process holds how much VRAM come from a JSON file that the
tests (or a user trying the agent) edit while the agent runs; it is re-read whenever it changes.
Utilisation is measured, not declared: a process's SM percent over a sample interval is

    100 × (Δ on-CPU time + Δ run-queue wait time) / Δ wall time      (from /proc/<pid>/schedstat)

i.e. the share of the interval the process was running *or ready to run*. A CPU-bound loop that
nobody stops reads ~100 % however loaded the machine is (the CPU time it was denied by other load
counts as time it "could have had"); SIGSTOP removes it from both counters, so the agent's duty
cycling changes exactly what the fake measures, and the compute controller runs in closed loop.
One bias remains, and the closed loop absorbs it: a process sent SIGSTOP stays runnable until it
gets a CPU to take the signal, so on a loaded machine each stop costs a few ms of "busy" time (tens
of ms for a niced process, which is why the tests' workers are not niced).
Processes do not contend with each other on the fake GPU (a real GPU time-slices them; the GPU
benchmark measures that); the device's own utilisation is the sum of its processes', capped at 100.

File format (JSON):
    {"driverVersion": "550.54.15",
     "gpus": [{"uuid": "GPU-…", "name": "NVIDIA A100-SXM4-40GB", "memoryBytes": 42949672960,
               "numaNode": 0, "health": null}],
     "processes": [{"pid": 1234, "gpu": "GPU-…", "usedMemory": 1073741824}]}
A GPU removed from "gpus" is gone; a non-null "health" (e.g. "Xid 79: fallen off the bus") is an
unhealthy device.

Must not: signal or otherwise touch the processes it observes.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpupool_incluster.agent.nvml import DeviceGone, DeviceInfo, GpuProcess, NvmlError, UtilSample

__all__ = ["FakeNvml", "runnable_ns"]

_MIN_SAMPLE_NS = 5_000_000  # a sample over less than 5 ms says nothing


def runnable_ns(pid: int, proc_root: Path = Path("/proc")) -> int | None:
    """On-CPU plus run-queue wait time of `pid` in ns, or None when the process is gone."""
    try:
        fields = (proc_root / str(pid) / "schedstat").read_text().split()
        return int(fields[0]) + int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


@dataclass(slots=True)
class _Reading:
    wall_ns: int
    runnable_ns: int


class FakeNvml:
    """NVML over a JSON file and /proc; thread-safe."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._data: dict[str, Any] = {}
        self._readings: dict[int, _Reading] = {}
        self._load()

    # ---- the file ---------------------------------------------------------------------------
    def _load(self) -> dict[str, Any]:
        with self._lock:
            try:
                stat = self._path.stat()
            except OSError as exc:
                raise NvmlError(f"fake NVML file {self._path}: {exc.strerror}") from None
            stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp != self._stamp:
                try:
                    data = json.loads(self._path.read_text())
                except (OSError, ValueError) as exc:
                    if self._stamp is None:
                        raise NvmlError(f"fake NVML file {self._path}: {exc}") from None
                    return self._data  # a half-written update: keep the last good state
                if not isinstance(data, dict) or not isinstance(data.get("gpus", []), list):
                    raise NvmlError(f"fake NVML file {self._path}: expected an object with a 'gpus' list")
                self._data, self._stamp = data, stamp
            return self._data

    def _gpu(self, uuid: str) -> dict[str, Any]:
        for gpu in self._load().get("gpus", []):
            if gpu.get("uuid") == uuid:
                return dict(gpu)
        raise DeviceGone(uuid, "no longer listed by the driver")

    # ---- Nvml ------------------------------------------------------------------------------
    def driver_version(self) -> str:
        return str(self._load().get("driverVersion", ""))

    def devices(self) -> list[DeviceInfo]:
        found = []
        for index, gpu in enumerate(self._load().get("gpus", [])):
            try:
                found.append(
                    DeviceInfo(
                        uuid=str(gpu["uuid"]),
                        index=int(gpu.get("index", index)),
                        name=str(gpu["name"]),
                        memory_total=int(gpu["memoryBytes"]),
                        numa_node=None if gpu.get("numaNode") is None else int(gpu["numaNode"]),
                        pci_bus_id=str(gpu.get("pciBusId", f"00000000:{index + 1:02X}:00.0")),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise NvmlError(
                    f"fake NVML file {self._path}: gpu #{index} lacks or mistypes {exc}"
                ) from None
        return found

    def health(self, uuid: str) -> str | None:
        try:
            value = self._gpu(uuid).get("health")
        except DeviceGone as gone:
            return gone.reason
        return None if value in (None, "") else str(value)

    def compute_processes(self, uuid: str) -> list[GpuProcess]:
        self._gpu(uuid)
        found = []
        for entry in self._load().get("processes", []):
            if entry.get("gpu") != uuid:
                continue
            pid = int(entry["pid"])
            if runnable_ns(pid) is None:
                continue  # exited: NVML stops listing it
            used = entry.get("usedMemory")
            found.append(GpuProcess(pid=pid, used_memory=None if used is None else int(used)))
        return found

    def process_utilization(self, uuid: str, since_us: int) -> list[UtilSample]:
        del since_us  # each call measures since this fake's previous reading of each process
        samples = []
        for process in self.compute_processes(uuid):
            now, runnable = time.monotonic_ns(), runnable_ns(process.pid)
            if runnable is None:
                continue
            with self._lock:
                last = self._readings.get(process.pid)
                if last is None or now - last.wall_ns >= _MIN_SAMPLE_NS:
                    self._readings[process.pid] = _Reading(now, runnable)
            if last is None or now - last.wall_ns < _MIN_SAMPLE_NS:
                continue
            share = (runnable - last.runnable_ns) / (now - last.wall_ns)
            samples.append(UtilSample(process.pid, now // 1000, max(0.0, min(100.0, 100.0 * share))))
        return samples

    def now_us(self) -> int:
        return time.monotonic_ns() // 1000

    def close(self) -> None:
        """Nothing to release: the fake holds no handle."""
