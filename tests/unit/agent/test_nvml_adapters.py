"""The NVML port's two adapters keep one contract.

`check_port` runs against the fake NVML (always) and against the real nvidia-ml-py adapter when
this machine has a GPU (the parameter list is built at collection time: without a GPU the real
case is simply not collected). The real adapter's error translation is also checked against a
stand-in module carrying pynvml's names: a lost GPU is `DeviceGone`, "no samples" is an empty list,
a hidden per-process memory is None, a critical Xid marks the device unhealthy.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpupool_incluster.agent.nvml import DeviceGone, Nvml, NvmlError
from gpupool_incluster.agent.nvml_fake import FakeNvml
from gpupool_incluster.agent.nvml_real import RealNvml


def _gpu_present() -> bool:
    try:
        RealNvml()
    except NvmlError:
        return False
    return True


ADAPTERS = ["fake", *(["real"] if _gpu_present() else [])]
UNKNOWN = "GPU-00000000-dead-beef-0000-000000000000"


def _fake(tmp_path: Path) -> FakeNvml:
    path = tmp_path / "nvml.json"
    body = {"gpus": [{"uuid": "GPU-1", "name": "NVIDIA L4", "memoryBytes": 24 * 2**30, "numaNode": 0}]}
    path.write_text(json.dumps(body))
    return FakeNvml(path)


def check_port(nvml: Nvml) -> None:
    devices = nvml.devices()
    assert devices, "a GPU machine lists at least one device"
    assert [d.index for d in devices] == sorted(d.index for d in devices)
    for device in devices:
        assert device.uuid.startswith("GPU-") and device.name and device.memory_total > 0
        assert nvml.health(device.uuid) is None
        for process in nvml.compute_processes(device.uuid):
            assert process.pid > 0 and (process.used_memory is None or process.used_memory >= 0)
        for sample in nvml.process_utilization(device.uuid, nvml.now_us() - 1_000_000):
            assert 0.0 <= sample.sm_percent <= 100.0
    assert nvml.health(UNKNOWN) is not None
    with pytest.raises(DeviceGone):
        nvml.compute_processes(UNKNOWN)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_port_contract(adapter: str, tmp_path: Path) -> None:
    check_port(_fake(tmp_path) if adapter == "fake" else RealNvml())


class _Error(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def _stand_in(*, lost: set[str], xid: int | None = None) -> Any:
    handles = {0: "GPU-A", 1: "GPU-B"}
    events = [SimpleNamespace(eventData=xid, device=1)] if xid is not None else []

    def by_uuid(uuid: str) -> int:
        if uuid in lost:
            raise _Error(15)
        if uuid not in handles.values():
            raise _Error(6)
        return next(i for i, u in handles.items() if u == uuid)

    def wait(_events: object, _timeout: int) -> object:
        if not events:
            raise _Error(10)  # timeout
        return events.pop()

    def utilization(_handle: int, _since: int) -> list[object]:
        raise _Error(6)  # NVML_ERROR_NOT_FOUND: no samples since `since`

    return SimpleNamespace(
        NVMLError=_Error,
        NVML_ERROR_GPU_IS_LOST=15,
        NVML_ERROR_NOT_FOUND=6,
        nvmlEventTypeXidCriticalError=8,
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlDeviceGetUUID=lambda h: handles[h],
        nvmlDeviceGetName=lambda h: "NVIDIA A100-SXM4-80GB",
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=80 * 2**30),
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=f"00000000:0{h}:00.0"),
        nvmlDeviceGetNumaNodeId=lambda h: h,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [SimpleNamespace(pid=42, usedGpuMemory=None)],
        nvmlDeviceGetProcessUtilization=utilization,
        nvmlEventSetCreate=lambda: object(),
        nvmlDeviceRegisterEvents=lambda h, kinds, events: None,
        nvmlEventSetWait_v2=wait,
        nvmlSystemGetDriverVersion=lambda: "550.54.15",
    )


def test_real_adapter_translates_nvml_answers() -> None:
    nvml = RealNvml(_stand_in(lost={"GPU-B"}))
    assert [(d.uuid, d.index, d.numa_node, d.memory_total) for d in nvml.devices()] == [
        ("GPU-A", 0, 0, 80 * 2**30),
        ("GPU-B", 1, 1, 80 * 2**30),
    ]
    assert nvml.driver_version() == "550.54.15"
    assert [(p.pid, p.used_memory) for p in nvml.compute_processes("GPU-A")] == [(42, None)]
    assert nvml.process_utilization("GPU-A", 0) == []
    assert nvml.health("GPU-A") is None
    assert nvml.health("GPU-B") is not None
    with pytest.raises(DeviceGone) as gone:
        nvml.compute_processes("GPU-B")
    assert gone.value.uuid == "GPU-B"


def test_real_adapter_reports_critical_xids_but_not_others() -> None:
    assert RealNvml(_stand_in(lost=set(), xid=79)).health("GPU-B") == "Xid 79"
    assert RealNvml(_stand_in(lost=set(), xid=13)).health("GPU-B") is None  # Xid 13: an application fault


def test_without_a_driver_the_real_adapter_refuses_clearly() -> None:
    stand_in = _stand_in(lost=set())

    def no_library() -> None:
        raise _Error(12)

    stand_in.nvmlInit = no_library
    with pytest.raises(NvmlError, match="NVML is unavailable"):
        RealNvml(stand_in)
