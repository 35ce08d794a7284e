"""CPU-only closed-loop figures of the node agent on the fake NVML: prints them, asserts nothing.

No GPU needed. Workers are real OS processes (CPU-bound loops); the fake GPU measures each one's
utilisation as the share of time it was running or ready to run (/proc/<pid>/schedstat: see
`gpupool_incluster.agent.nvml_fake`), so the agent's SIGSTOP / SIGCONT duty cycling is measured in
closed loop. Prints, for one run of each:

1. Compute shares: three workers limited to 25 / 50 / 75 % of one fake A100, concurrently, plus a
   `critical` and a `low` worker that each request 60 % of a second GPU (so critical should keep 60
   and low yield to 40). For each: the share achieved over the window, and the spread (min / max)
   of its 1-second sub-windows.
2. VRAM reaction: ``--vram-runs`` times a worker's reported VRAM jumps over its vram-limit; the time
   until its process is dead (median, max), and whether an innocent process survived.
3. The agent's own CPU cost while enforcing (CPU seconds per wall second of the agent's threads).

Run:  .venv/bin/python benchmarks/agent_closed_loop.py [--window 20] [--vram-runs 10]
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gpupool.core.model.foreign import Pod
from gpupool_incluster.agent.nvml_fake import FakeNvml, runnable_ns
from gpupool_incluster.agent.procs import PodProcess
from gpupool_incluster.agent.runner import Agent, AgentOptions

T = "tensor-fusion.ai/"
GIB = 1024**3
BUSY = "while True:\n    pass\n"
IDLE = "import time\nwhile True:\n    time.sleep(0.05)\n"


def uuid(index: int) -> str:
    return f"GPU-{index:08x}-0000-4000-8000-000000000000"


def gpu_name(index: int) -> str:
    return uuid(index).lower()


class Pods:
    """AgentCluster in memory (pods given here; writes dropped) and a pid → pod locator."""

    def __init__(self) -> None:
        self.pods: list[Pod] = []
        self.owner: dict[int, str] = {}

    def add(self, pid: int, name: str, gpu: str, **annotations: str) -> None:
        """A worker pod named `name` holding GPU object `gpu`, owning process `pid`."""
        uid = f"uid-{name}"
        self.owner[pid] = uid
        notes = {T + "gpu-ids": gpu, **{T + k.replace("_", "-"): v for k, v in annotations.items()}}
        self.pods.append(
            Pod.model_validate(
                {
                    "metadata": {
                        "name": name,
                        "namespace": "bench",
                        "uid": uid,
                        "labels": {T + "enabled": "true"},
                        "annotations": notes,
                    },
                    "spec": {"nodeName": "bench-node"},
                    "status": {"phase": "Running"},
                }
            )
        )

    def locate(self, pid: int) -> PodProcess | None:
        uid = self.owner.get(pid)
        return PodProcess(uid, None) if uid else None

    def node_pods(self, node: str) -> list[Pod]:
        return list(self.pods)

    def node_gpus(self, node: str) -> list[dict[str, object]]:
        return []

    def apply_gpu(self, body: object) -> None: ...
    def node_pool(self, node: str) -> str | None:
        return "bench"

    def write_gpunode_status(self, node: str, status: object) -> None: ...
    def record_event(self, **kwargs: object) -> None: ...
    def evict_pod(self, namespace: str, name: str, *, uid: str = "") -> None: ...


def write_nvml(path: Path, gpus: int, processes: list[tuple[int, int, int]]) -> None:
    body = {
        "gpus": [
            {"uuid": uuid(i), "index": i, "name": "NVIDIA A100-SXM4-40GB", "memoryBytes": 40 * GIB}
            for i in range(gpus)
        ],
        "processes": [{"pid": p, "gpu": uuid(g), "usedMemory": m} for p, g, m in processes],
    }
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(body))
    os.replace(scratch, path)


def make_agent(folder: Path, pods: Pods, *, discovery_s: float) -> Agent:
    options = AgentOptions(node="bench-node", discovery_interval_s=discovery_s)
    return Agent(options, nvml=FakeNvml(folder / "nvml.json"), cluster=pods, locator=pods)


def start(agent: Agent) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    thread.start()
    return stop, thread


def compute_shares(folder: Path, window: float) -> None:
    workers = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(5)]
    try:
        pods = Pods()
        plan = [("w25", 0, "78", "20", "medium", 25), ("w50", 0, "156", "20", "medium", 50),
                ("w75", 0, "234", "20", "medium", 75), ("critical", 1, "312", "187.2", "critical", 60),
                ("low", 1, "312", "187.2", "low", 40)]  # fmt: skip
        for process, (name, gpu, limit, request, qos, _) in zip(workers, plan, strict=True):
            pods.add(process.pid, name, gpu_name(gpu), tflops_limit=limit, tflops_request=request, qos=qos)
        write_nvml(folder / "nvml.json", 2, [(p.pid, plan[i][1], GIB) for i, p in enumerate(workers)])
        agent = make_agent(folder, pods, discovery_s=1.0)
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        stop, thread = start(agent)
        time.sleep(3.0)  # settle
        began = time.monotonic()
        marks = [[(time.monotonic_ns(), runnable_ns(p.pid) or 0)] for p in workers]
        while time.monotonic() - began < window:
            time.sleep(1.0)
            for mark, process in zip(marks, workers, strict=True):
                mark.append((time.monotonic_ns(), runnable_ns(process.pid) or 0))
        wall = time.monotonic() - began + 3.0
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
        stop.set()
        thread.join(10)
        print(f"compute shares over {window:.0f} s (after 3 s settling), 5 workers on 2 fake GPUs at once:")
        print(f"  {'worker':<10}{'target %':>9}{'achieved %':>12}{'1-s min':>9}{'1-s max':>9}")
        for mark, (name, *_, target) in zip(marks, plan, strict=True):
            whole = 100 * (mark[-1][1] - mark[0][1]) / (mark[-1][0] - mark[0][0])
            seconds = [100 * (b[1] - a[1]) / (b[0] - a[0]) for a, b in itertools.pairwise(mark)]
            print(f"  {name:<10}{target:>9}{whole:>12.1f}{min(seconds):>9.1f}{max(seconds):>9.1f}")
        cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
        print(f"agent CPU: {cpu / wall:.3f} CPU-seconds per second (compute tick 100 ms, 5 workers)")
    finally:
        for process in workers:
            os.kill(process.pid, 18)
            process.kill()
            process.wait()


def vram_reaction(folder: Path, runs: int) -> None:
    innocent = subprocess.Popen([sys.executable, "-c", IDLE])
    pods = Pods()
    write_nvml(folder / "nvml.json", 1, [(innocent.pid, 0, 30 * GIB)])
    agent = make_agent(folder, pods, discovery_s=0.2)
    stop, thread = start(agent)
    times = []
    try:
        for run in range(runs):
            victim = subprocess.Popen([sys.executable, "-c", IDLE])
            pods.add(victim.pid, f"v{run}", gpu_name(0), vram_limit="4Gi", vram_request="1Gi")
            write_nvml(folder / "nvml.json", 1, [(innocent.pid, 0, 30 * GIB), (victim.pid, 0, 3 * GIB)])
            while f"uid-v{run}" not in agent.enforcer.workers:
                time.sleep(0.01)
            time.sleep(0.6)
            write_nvml(folder / "nvml.json", 1, [(innocent.pid, 0, 30 * GIB), (victim.pid, 0, 5 * GIB)])
            began = time.monotonic()
            while victim.poll() is None and time.monotonic() - began < 5:
                time.sleep(0.005)
            times.append(time.monotonic() - began)
            victim.wait()
    finally:
        stop.set()
        thread.join(10)
        survived = innocent.poll() is None
        innocent.kill()
        innocent.wait()
    print(f"VRAM over-limit → process killed ({runs} runs, memory sample 500 ms, grace 2 samples):")
    print(f"  median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms; "
          f"innocent process (30 GiB, in no pod) survived: {survived}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--window", type=float, default=20.0, help="seconds of the compute window (default 20)"
    )
    parser.add_argument("--vram-runs", type=int, default=10, help="VRAM over-limit runs (default 10)")
    args = parser.parse_args()
    logging.getLogger("gpupool.agent").setLevel(logging.ERROR)  # the figures, not the agent's log
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as scratch:
        compute_shares(Path(scratch), args.window)
        vram_reaction(Path(scratch), args.vram_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
