"""The device plugin against a fake kubelet over unix sockets (real gRPC, the v1beta1 API).

The fake kubelet serves Registration on kubelet.sock and records what registers (again after it
restarts); then, as the kubelet does, it dials each plugin's endpoint: ListAndWatch must list the
virtual devices of all 16 index resources (and re-send them Unhealthy when the node loses its
GPUs), GetPreferredAllocation must honour must-include devices, and Allocate must hand the
container exactly the GPUs the scheduler annotated (as NVIDIA_VISIBLE_DEVICES UUIDs) with its
limits — and refuse a pod whose GPUs this node does not have, or a request no pending worker
matches. The committed generated module must equal what api.proto compiles to.
"""

from __future__ import annotations

import ast
import re
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from gpupool.core.model.foreign import Pod
from gpupool.scheduler.pod_record import record_annotations
from gpupool_incluster.agent.deviceplugin import api_pb2 as pb
from gpupool_incluster.agent.deviceplugin.generate import compile_proto
from gpupool_incluster.agent.deviceplugin.server import DevicePlugins

sys.path.insert(0, str(Path(__file__).parent))
from agent_builders import FakeKubelet

T = "tensor-fusion.ai/"
UUIDS = {"gpu-aaaa": "GPU-AAAA", "gpu-bbbb": "GPU-BBBB", "gpu-cccc": "GPU-CCCC"}


def _pod(name: str, gpus: str, *, created: str, index: str = "index_0", count: str = "1") -> Pod:
    """A pending worker as the relay's bind leaves it: gpu-ids and the allocation record."""
    unbound = _unbound(name, created=created, index=index, count=count)
    record = record_annotations(unbound, "node-a", gpus.split(","))
    notes = {**unbound.metadata.annotations, **record}
    return unbound.model_copy(update={"metadata": unbound.metadata.model_copy(update={"annotations": notes})})


def _unbound(name: str, *, created: str, index: str = "index_0", count: str = "1") -> Pod:
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "team",
                "uid": f"uid-{name}",
                "creationTimestamp": created,
                "labels": {T + "enabled": "true"},
                "annotations": {
                    T + "tflops-request": "10",
                    T + "tflops-limit": "20",
                    T + "vram-limit": "4Gi",
                },
            },
            "spec": {
                "nodeName": "node-a",
                "containers": [{"name": "c", "resources": {"limits": {T + index: count}}}],
            },
            "status": {"phase": "Pending"},
        }
    )


@pytest.fixture
def setup() -> Iterator[tuple[DevicePlugins, FakeKubelet, list[Pod]]]:
    # A short directory: unix socket paths are limited to ~107 bytes.
    with tempfile.TemporaryDirectory(prefix="dp-", dir="/tmp") as scratch:
        folder = Path(scratch)
        pods = [
            _pod("late", "gpu-cccc", created="2026-01-01T00:00:10Z"),
            _pod("early", "gpu-aaaa,gpu-bbbb", created="2026-01-01T00:00:00Z"),
            _pod("stranger", "gpu-zzzz", created="2026-01-01T00:00:05Z", index="index_3"),
        ]
        kubelet = FakeKubelet(folder)
        plugins = DevicePlugins(
            socket_dir=folder, node="node-a", pods=lambda: pods, gpus=lambda: UUIDS, devices_per_resource=8
        )
        plugins.start()
        try:
            yield plugins, kubelet, pods
        finally:
            plugins.stop()
            kubelet.server.stop(0)


def test_registers_16_index_resources_and_lists_their_devices(
    setup: tuple[DevicePlugins, FakeKubelet, list[Pod]],
) -> None:
    plugins, kubelet, _ = setup
    plugins.register()
    names = [r.resource_name for r in kubelet.registered]
    assert names == [f"tensor-fusion.ai/index_{i:x}" for i in range(16)]
    assert {r.version for r in kubelet.registered} == {"v1beta1"}
    assert all(r.options.get_preferred_allocation_available for r in kubelet.registered)
    for request in kubelet.registered:
        socket = plugins.socket_dir / request.endpoint
        channel, calls = kubelet.dial(socket)
        with channel:
            stream = calls["ListAndWatch"](pb.Empty(), timeout=10)
            first = next(stream)
            suffix = request.resource_name.rsplit("_", 1)[1]
            assert [d.ID for d in first.devices] == [f"index_{suffix}-{n:03d}" for n in range(8)]
            assert {d.health for d in first.devices} == {"Healthy"}
            if suffix == "0":
                plugins.set_healthy(False)
                assert {d.health for d in next(stream).devices} == {"Unhealthy"}
                plugins.set_healthy(True)
                assert {d.health for d in next(stream).devices} == {"Healthy"}
            stream.cancel()


def test_plugins_register_again_after_a_kubelet_restart(
    setup: tuple[DevicePlugins, FakeKubelet, list[Pod]],
) -> None:
    plugins, kubelet, _ = setup
    plugins.register()
    stop = threading.Event()
    watcher = threading.Thread(target=plugins.keep_registered, args=(stop, 0.05), daemon=True)
    watcher.start()
    try:
        kubelet.server.stop(0).wait(5)
        for path in plugins.socket_dir.glob("*.sock"):  # a restarting kubelet wipes the directory
            path.unlink()
        restarted = FakeKubelet(plugins.socket_dir)
        deadline = time.monotonic() + 10
        while len(restarted.registered) < 16 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [r.resource_name for r in restarted.registered][-1] == "tensor-fusion.ai/index_f"
        assert len(restarted.registered) == 16
        channel, calls = restarted.dial(plugins.plugins[0].socket_path)
        with channel:
            assert len(next(calls["ListAndWatch"](pb.Empty(), timeout=10)).devices) == 8
        restarted.server.stop(0)
    finally:
        stop.set()
        watcher.join(5)


def test_allocate_gives_exactly_the_annotated_gpus_oldest_pending_pod_first(
    setup: tuple[DevicePlugins, FakeKubelet, list[Pod]],
) -> None:
    plugins, kubelet, _ = setup
    channel, calls = kubelet.dial(plugins.plugins[0].socket_path)
    with channel:
        request = pb.AllocateRequest(
            container_requests=[pb.ContainerAllocateRequest(devices_ids=["index_0-005"])]
        )
        first = calls["Allocate"](request, timeout=10).container_responses[0].envs
        assert first["NVIDIA_VISIBLE_DEVICES"] == "GPU-AAAA,GPU-BBBB"
        assert first["GPUPOOL_GPU_IDS"] == "gpu-aaaa,gpu-bbbb"
        assert first["GPUPOOL_TFLOPS_LIMIT"] == "20" and first["GPUPOOL_VRAM_LIMIT_BYTES"] == str(4 * 1024**3)
        second = calls["Allocate"](request, timeout=10).container_responses[0].envs
        assert second["NVIDIA_VISIBLE_DEVICES"] == "GPU-CCCC"
        with pytest.raises(grpc.RpcError) as none_left:
            calls["Allocate"](request, timeout=10)
        assert none_left.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no pending gpupool worker" in str(none_left.value.details())
        preferred = calls["GetPreferredAllocation"](
            pb.PreferredAllocationRequest(
                container_requests=[
                    pb.ContainerPreferredAllocationRequest(
                        available_deviceIDs=["index_0-007", "index_0-001", "index_0-003"],
                        must_include_deviceIDs=["index_0-007"],
                        allocation_size=2,
                    )
                ]
            ),
            timeout=10,
        )
        assert list(preferred.container_responses[0].deviceIDs) == ["index_0-007", "index_0-001"]
    channel, calls = kubelet.dial(plugins.plugins[3].socket_path)
    with channel:
        request = pb.AllocateRequest(
            container_requests=[pb.ContainerAllocateRequest(devices_ids=["index_3-000"])]
        )
        with pytest.raises(grpc.RpcError) as foreign:
            calls["Allocate"](request, timeout=10)
        assert foreign.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "gpu-zzzz" in str(foreign.value.details())


def _descriptor(source: str) -> bytes:
    found = re.search(r"AddSerializedFile\((b'.*?')\)\n", source)
    assert found is not None
    value = ast.literal_eval(found.group(1))
    assert isinstance(value, bytes)
    return value


def test_committed_descriptor_matches_the_proto(tmp_path: Path) -> None:
    compile_proto(tmp_path)
    committed = _descriptor(Path(pb.__file__).read_text())
    assert _descriptor((tmp_path / "api_pb2.py").read_text()) == committed
    assert b"v1beta1" in committed and b"GetPreferredAllocation" in committed
