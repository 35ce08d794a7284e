"""Builders for the agent tests: busy worker processes, a fake /proc for cgroups, fake NVML files,
worker pods and an in-memory AgentCluster that records what the agent wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import grpc

from gpupool.core.model.foreign import Pod
from gpupool.scheduler.pod_record import record_annotations
from gpupool_incluster.agent.deviceplugin import api_pb2 as pb
from gpupool_incluster.agent.discovery import hostname_label
from gpupool_incluster.agent.nvml_fake import FakeNvml
from gpupool_incluster.agent.procs import CgroupLocator
from gpupool_incluster.agent.runner import Agent, AgentOptions

T = "tensor-fusion.ai/"
GIB = 1024**3
# Not niced: a niced process that is sent SIGSTOP stays runnable until it gets a CPU to take the
# signal, which on a loaded machine counts as "running" on the fake GPU (see nvml_fake).
BUSY = "while True:\n    pass\n"
IDLE = "import time\nwhile True:\n    time.sleep(0.05)\n"


def pod_uid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


@contextmanager
def processes(count: int, *, busy: bool = True) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` real OS processes (CPU-bound loops, or sleepers); always killed and resumed after."""
    started = [subprocess.Popen([sys.executable, "-c", BUSY if busy else IDLE]) for _ in range(count)]
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                os.kill(process.pid, 18)  # SIGCONT first: a stopped process cannot die cleanly
                process.kill()
            process.wait(5)


def write_cgroups(proc_root: Path, owners: Mapping[int, str]) -> None:
    """A fake proc root in which each pid's cgroup (v2, systemd driver) names its pod UID."""
    for pid, uid in owners.items():
        folder = proc_root / str(pid)
        folder.mkdir(parents=True, exist_ok=True)
        slice_uid = uid.replace("-", "_")
        path = (
            f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{slice_uid}.slice/"
            f"cri-containerd-{pid:064x}.scope"
        )
        (folder / "cgroup").write_text(f"0::{path}\n")


def gpu_uuid(index: int) -> str:
    return f"GPU-{index:08x}-1111-2222-3333-444444444444"


def write_fake_nvml(
    path: Path,
    *,
    gpus: int | Sequence[int] = 1,
    processes: Sequence[tuple[int, int, int]] = (),
    health: Mapping[int, str] | None = None,
    name: str = "NVIDIA A100-SXM4-40GB",
) -> None:
    """Atomically write a fake NVML file: GPUs by index; processes as (pid, gpu index, bytes)."""
    indices = range(gpus) if isinstance(gpus, int) else gpus
    body = {
        "driverVersion": "550.54.15",
        "gpus": [
            {
                "uuid": gpu_uuid(i),
                "index": i,
                "name": name,
                "memoryBytes": 40 * GIB,
                "numaNode": i // 4,
                "health": (health or {}).get(i),
            }
            for i in indices
        ],
        "processes": [{"pid": pid, "gpu": gpu_uuid(g), "usedMemory": used} for pid, g, used in processes],
    }
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(body))
    os.replace(scratch, path)


def worker_pod(
    n: int,
    *,
    node: str = "node-a",
    gpus: Sequence[str] = ("gpu-00000000-1111-2222-3333-444444444444",),
    tflops_request: str = "10",
    tflops_limit: str | None = None,
    vram_limit: str = "4Gi",
    qos: str = "medium",
    worker: bool = True,
) -> Pod:
    annotations = {
        T + "tflops-request": tflops_request,
        T + "tflops-limit": tflops_limit or tflops_request,
        T + "vram-request": "1Gi",
        T + "vram-limit": vram_limit,
        T + "qos": qos,
    }
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"w{n}",
            "namespace": "team",
            "uid": pod_uid(n),
            "labels": {T + "enabled": "true"},
            "annotations": annotations,
        },
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }
    if worker:  # as the relay's bind writes them: gpu-ids and the allocation record
        annotations.update(record_annotations(Pod.model_validate(body), node, gpus))
    return Pod.model_validate(body)


class FakeCluster:
    """AgentCluster in memory: pods given by the test; writes and events recorded."""

    def __init__(self, pods: Sequence[Pod] = (), pool: str | None = "shared") -> None:
        self.pods = list(pods)
        self.pool = pool
        self.gpus: dict[str, dict[str, Any]] = {}
        self.gpunode: dict[str, Any] | None = None
        self.events: list[tuple[str, str, str]] = []
        self.evicted: list[str] = []
        self.evicted_uids: list[str] = []
        self.lock = threading.Lock()

    def node_pods(self, node: str) -> list[Pod]:
        return [p for p in self.pods if p.spec.node_name == node]

    def node_gpus(self, node: str) -> list[dict[str, Any]]:
        return [
            g
            for g in self.gpus.values()
            if g["metadata"]["labels"].get("kubernetes.io/hostname") == hostname_label(node)
        ]

    def apply_gpu(self, body: dict[str, Any]) -> None:
        self.gpus[body["metadata"]["name"]] = body

    def node_pool(self, node: str) -> str | None:
        return self.pool

    def write_gpunode_status(self, node: str, status: dict[str, Any]) -> None:
        self.gpunode = status

    def record_event(
        self,
        *,
        involved: dict[str, Any],
        reason: str,
        message: str,
        kind: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        with self.lock:
            self.events.append((kind, reason, message))

    def evict_pod(self, namespace: str, name: str, *, uid: str = "") -> None:
        with self.lock:
            self.evicted.append(f"{namespace}/{name}")
            self.evicted_uids.append(uid)


def wait_for(condition: Any, what: str, timeout: float = 10.0) -> float:
    """Poll until `condition()` is true; the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def process_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat (R, S, T for stopped, Z, …), "" when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return text.rsplit(")", 1)[1].split()[0]


class FakeKubelet:
    def __init__(self, socket_dir: Path) -> None:
        self.registered: list[pb.RegisterRequest] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.unary_unary_rpc_method_handler(
            self._register, pb.RegisterRequest.FromString, pb.Empty.SerializeToString
        )
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("v1beta1.Registration", {"Register": handler}),)
        )
        self.server.add_insecure_port(f"unix://{socket_dir / 'kubelet.sock'}")
        self.server.start()

    def _register(self, request: pb.RegisterRequest, context: Any) -> pb.Empty:
        self.registered.append(request)
        return pb.Empty()

    def dial(self, socket: Path) -> tuple[grpc.Channel, dict[str, Any]]:
        channel = grpc.insecure_channel(f"unix://{socket}")
        base = "/v1beta1.DevicePlugin/"
        calls = {
            "ListAndWatch": channel.unary_stream(
                base + "ListAndWatch", pb.Empty.SerializeToString, pb.ListAndWatchResponse.FromString
            ),
            "Allocate": channel.unary_unary(
                base + "Allocate", pb.AllocateRequest.SerializeToString, pb.AllocateResponse.FromString
            ),
            "GetPreferredAllocation": channel.unary_unary(
                base + "GetPreferredAllocation",
                pb.PreferredAllocationRequest.SerializeToString,
                pb.PreferredAllocationResponse.FromString,
            ),
        }
        return channel, calls


@contextmanager
def running(agent: Agent) -> Iterator[None]:
    """Run the agent's loop on a thread for the body of the `with`; stop and join it after."""
    stop = threading.Event()
    loop = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    loop.start()
    try:
        yield
    finally:
        stop.set()
        loop.join(10)


def fake_nvml_agent(tmp_path: Path, cluster: FakeCluster, **options: object) -> Agent:
    """An agent on node-a over the fake NVML file and the cgroup tree under `tmp_path`."""
    return Agent(
        AgentOptions(node="node-a", discovery_interval_s=0.2, **options),  # type: ignore[arg-type]
        nvml=FakeNvml(tmp_path / "nvml.json"),
        cluster=cluster,
        locator=CgroupLocator(tmp_path / "proc"),
    )
