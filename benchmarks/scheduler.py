"""Scheduler benchmark: in-process filter + score + reserve throughput, and HTTP filter latency.

Prints, for every placement mode and for 1,000 and 5,000 nodes x 8 GPUs with 20,000 existing
workers (one in 20 with `hard` isolation, so the isolation stage removes candidates for both
kinds of pod), how many pods per second the allocator places (filter, score, reserve — the
whole decision, one pod at a time), and the p50 / p99 of POST /scheduler/filter over loopback
HTTP at 1,000 nodes (the relay app under uvicorn in this process, a keep-alive client, every
node name in each request, as kube-scheduler sends with nodeCacheCapable).

Every in-process figure includes each mode's warm-up (FragmentationAware's first decisions of
each request shape, and of each shape joining the mix). The machine's load average is printed
before and after, and a summary compares each mode at 5,000 nodes with the target and with
NodeCompactGPULowLoad measured in the same run (the ratio survives a loaded machine; the absolute
figure does not).

Usage: .venv/bin/python benchmarks/scheduler.py [--pods 2000] [--requests 400] [--mode MODE]...
Targets (issues 5, 12, 24): >= 800 pods/s at 5,000 nodes in every mode (BalancedFit included); filter p99
<= 20 ms at 1,000 nodes.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import threading
import time
from collections.abc import Mapping
from typing import Any

GI = 1 << 30
GPUS_PER_NODE = 8
EXISTING_WORKERS = 20_000


def build_allocator(nodes: int, *, seed: int = 7, mode: str = "NodeCompactGPULowLoad") -> Any:
    from gpupool.core.allocator import Allocation, Allocator, GpuInfo, PlacementMode, PlacementPolicy

    rng = random.Random(seed)
    allocator = Allocator(PlacementPolicy(mode=PlacementMode(mode)))
    for n in range(nodes):
        zone = f"zone-{n % 3}"
        for g in range(GPUS_PER_NODE):
            allocator.state.upsert_gpu(
                GpuInfo(
                    name=f"node-{n:05d}-gpu-{g}",
                    node=f"node-{n:05d}",
                    pool="shared",
                    tflops_capacity=312_000,
                    vram_capacity=80 * GI,
                    model="A100",
                    vendor="NVIDIA",
                    index=g,
                    node_labels=(("topology.kubernetes.io/zone", zone),),
                )
            )
    for w in range(EXISTING_WORKERS):
        node = rng.randrange(nodes)
        gpu = rng.randrange(GPUS_PER_NODE)
        tflops = rng.choice((10_000, 20_000, 40_000))
        allocator.add_allocation(
            Allocation(
                namespace="existing",
                name=f"worker-{w}",
                node=f"node-{node:05d}",
                gpus=(f"node-{node:05d}-gpu-{gpu}",),
                tflops_requests=(tflops,),
                tflops_limits=(tflops * 2,),
                vram_request=rng.choice((2, 4, 8)) * GI,
                vram_limit=8 * GI,
                isolation="hard" if w % 20 == 0 else "soft",
            )
        )
    allocator.state.ensure_layout()
    return allocator


def requests(count: int, *, seed: int = 11) -> list[Any]:
    from gpupool.core.allocator import GpuRequest, NodeConstraints

    rng = random.Random(seed)
    made = []
    for i in range(count):
        kind = i % 10
        constraints = NodeConstraints()
        if kind == 7:
            constraints = NodeConstraints(node_selector=(("topology.kubernetes.io/zone", f"zone-{i % 3}"),))
        made.append(
            GpuRequest(
                namespace="bench",
                name=f"pod-{i}",
                pool="shared",
                tflops_request=rng.choice((5_000, 10_000, 20_000)),
                tflops_limit=40_000,
                vram_request=rng.choice((1, 2, 4)) * GI,
                vram_limit=8 * GI,
                gpu_count=2 if kind == 9 else 1,
                isolation="hard" if kind == 5 else "soft",
                constraints=constraints,
            )
        )
    return made


TARGET_PODS_PER_SECOND = 800
REFERENCE_MODE = "NodeCompactGPULowLoad"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def in_process(nodes: int, pods: int, mode: str) -> float:
    from gpupool.core.allocator import AllocationError

    started = time.perf_counter()
    allocator = build_allocator(nodes, mode=mode)
    built = time.perf_counter() - started
    batch = requests(pods)
    placed = failed = 0
    begin = time.perf_counter()
    for request in batch:
        try:
            allocator.reserve(request)
            placed += 1
        except AllocationError:
            failed += 1
    elapsed = time.perf_counter() - begin
    print(
        f"in-process  {mode:<22} {nodes:>5} nodes x {GPUS_PER_NODE} GPUs, {EXISTING_WORKERS} workers: "
        f"{pods / elapsed:8.0f} pods/s  ({placed} placed, {failed} refused, "
        f"{elapsed * 1000 / pods:.3f} ms/pod; state built in {built:.1f} s)"
    )
    return pods / elapsed


class _NoWrites:
    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str | None]) -> None:
        raise RuntimeError("benchmark does not bind")

    def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        raise RuntimeError("benchmark does not bind")

    def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        raise RuntimeError("benchmark does not bind")


def http_filter(nodes: int, count: int) -> None:
    import httpx
    import uvicorn

    from gpupool_incluster.relay.app import create_app
    from gpupool_incluster.relay.hub import SchedulerHub

    hub = SchedulerHub(_NoWrites())
    hub.allocator = build_allocator(nodes)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(hub), host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    names = sorted(hub.allocator.state.node_names)
    pod = {
        "metadata": {
            "name": "probe",
            "namespace": "bench",
            "annotations": {
                "tensor-fusion.ai/tflops-request": "20",
                "tensor-fusion.ai/vram-request": "4Gi",
                "tensor-fusion.ai/gpupool": "shared",
            },
        },
        "spec": {"containers": [{"name": "c"}]},
    }
    latencies = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
            for i in range(count + 20):
                body = {"Pod": pod, "Nodes": None, "NodeNames": names}
                begin = time.perf_counter()
                answer = http.post("/scheduler/filter", json=body)
                took = time.perf_counter() - begin
                answer.raise_for_status()
                if i >= 20:  # warm-up excluded
                    latencies.append(took)
        kept = len(answer.json()["NodeNames"])
    finally:
        server.should_exit = True
        thread.join(10)
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    print(
        f"HTTP filter {nodes:>5} nodes x {GPUS_PER_NODE} GPUs, {EXISTING_WORKERS} existing workers: "
        f"p50 {p50:.2f} ms  p99 {p99:.2f} ms  over {len(latencies)} requests ({kept} nodes fit)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000, help="pods placed per in-process run")
    parser.add_argument("--requests", type=int, default=400, help="HTTP filter requests timed")
    parser.add_argument(
        "--mode", action="append", help="placement mode to time (repeatable; default: every mode)"
    )
    args = parser.parse_args()
    from gpupool.core.allocator import PlacementMode

    print(f"start: {load_average()}")
    at_5000: dict[str, float] = {}
    for mode in args.mode or [m.value for m in PlacementMode]:
        for nodes in (1_000, 5_000):
            rate = in_process(nodes, args.pods, mode)
        at_5000[mode] = rate
    http_filter(1_000, args.requests)
    print(f"end: {load_average()}")
    reference = at_5000.get(REFERENCE_MODE)
    print(f"summary at 5,000 nodes x {GPUS_PER_NODE} GPUs (target >= {TARGET_PODS_PER_SECOND} pods/s):")
    for mode, rate in at_5000.items():
        verdict = "met" if rate >= TARGET_PODS_PER_SECOND else "NOT met"
        ratio = f", {rate / reference:.2f} x {REFERENCE_MODE} in this run" if reference else ""
        share = rate / TARGET_PODS_PER_SECOND
        print(f"  {mode:<22} {rate:8.0f} pods/s  {share:.2f} x target — {verdict}{ratio}")


if __name__ == "__main__":
    main()
