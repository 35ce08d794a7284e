"""Device check of the node agent on a real NVIDIA GPU: prints figures, asserts nothing.

Needs one NVIDIA GPU, its driver (NVML), PyTorch with CUDA, and the agent extra. Workers are
PyTorch processes multiplying 4096×4096 fp16 matrices in a loop; the agent runs in this process
with the real NVML adapter, its pods given in memory (no cluster needed). Prints:

1. Baseline: matmul iterations/s of one unthrottled worker, and its NVML SM %.
2. One worker at a time limited to 25 / 50 / 75 % of the GPU (tflops-limit = share × the
   catalog's TFLOPS for the model): throughput relative to the baseline, and mean NVML SM %.
3. The three limits at once on the same GPU (they ask 150 % between them: the figures show how
   the hardware's time-slicing and the duty cycles share it).
4. VRAM over-limit reaction: a worker with vram-limit 2Gi grows from 1 GiB to 3 GiB of tensors;
   time from its allocation to its death (``--vram-runs`` runs), via the real kill path.

Sized to finish in under 5 minutes. Run:  python benchmarks/gpu_enforcement.py [--window 25]
Exit status 2 (and one line saying why) where there is no usable GPU.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_closed_loop import Pods

from gpupool_incluster.agent.discovery import catalog_model, gpu_object_name, model_tflops
from gpupool_incluster.agent.nvml import NvmlError
from gpupool_incluster.agent.nvml_real import RealNvml
from gpupool_incluster.agent.runner import Agent, AgentOptions

WORKER = r"""
import sys, time, torch
mode = sys.argv[1]
device = torch.device("cuda:0")
if mode == "matmul":
    a = torch.randn(4096, 4096, device=device, dtype=torch.float16)
    b = torch.randn(4096, 4096, device=device, dtype=torch.float16)
    count, last = 0, time.monotonic()
    while True:
        for _ in range(8):
            a @ b
        torch.cuda.synchronize()
        count += 8
        now = time.monotonic()
        if now - last >= 0.5:
            print(f"iters {now} {count}", flush=True)
            last = now
else:
    hold = [torch.empty(1 << 30, dtype=torch.uint8, device=device)]
    torch.cuda.synchronize()
    print("ready", flush=True)
    sys.stdin.readline()
    began = time.monotonic()
    hold += [torch.empty(1 << 30, dtype=torch.uint8, device=device) for _ in range(2)]
    torch.cuda.synchronize()
    print(f"grown {began}", flush=True)
    time.sleep(60)
"""


class Matmul:
    """A matmul worker process and the iteration counts it reports."""

    def __init__(self, uuid: str) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": uuid}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, "matmul"], stdout=subprocess.PIPE, text=True, env=env
        )
        self.reports: list[tuple[float, int]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            _, moment, count = line.split()
            self.reports.append((float(moment), int(count)))

    def rate(self, start: float, end: float) -> float:
        inside = [r for r in self.reports if start <= r[0] <= end]
        if len(inside) < 2:
            return 0.0
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    def stop(self) -> None:
        os.kill(self.process.pid, 18)  # SIGCONT, in case the agent left it stopped
        self.process.kill()
        self.process.wait()


def sm_percent(nvml: RealNvml, uuid: str, pid: int, since_us: int) -> float:
    samples = [s.sm_percent for s in nvml.process_utilization(uuid, since_us) if s.pid == pid]
    return statistics.fmean(samples) if samples else 0.0


def run_agent(nvml: RealNvml, pods: Pods) -> tuple[threading.Event, threading.Thread]:
    agent = Agent(
        AgentOptions(node="bench-node", discovery_interval_s=1.0), nvml=nvml, cluster=pods, locator=pods
    )
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    thread.start()
    return stop, thread


def measure(workers: list[Matmul], window: float, settle: float = 5.0) -> tuple[list[float], float, float]:
    time.sleep(settle)
    start = time.monotonic()
    time.sleep(window)
    return [w.rate(start, time.monotonic()) for w in workers], start, time.monotonic()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=25.0, help="seconds measured per case (default 25)")
    parser.add_argument("--vram-runs", type=int, default=5, help="VRAM over-limit runs (default 5)")
    args = parser.parse_args()
    logging.getLogger("gpupool.agent").setLevel(logging.ERROR)
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device")
        nvml = RealNvml()
        device = nvml.devices()[0]
    except (ImportError, RuntimeError, NvmlError, IndexError) as exc:
        print(f"gpu_enforcement: needs an NVIDIA GPU, NVML and PyTorch with CUDA: {exc}", file=sys.stderr)
        return 2
    model = catalog_model(device.name)
    tflops = model_tflops(model)
    if tflops is None:
        print(f"gpu_enforcement: the catalog has no TFLOPS for {device.name!r} ({model})", file=sys.stderr)
        return 2
    gpu = gpu_object_name(device.uuid)
    print(f"GPU: {device.name} ({model}, {tflops} TFLOPS in the catalog), driver {nvml.driver_version()}")

    baseline = Matmul(device.uuid)
    since = nvml.now_us()
    (rate,), *_ = measure([baseline], 8.0, settle=4.0)
    baseline_sm = sm_percent(nvml, device.uuid, baseline.process.pid, since)
    print(f"baseline: {rate:.0f} matmul/s, SM {baseline_sm:.0f} %")
    baseline.stop()

    print(f"one worker at a time ({args.window:.0f} s each):  limit % | throughput % of baseline | NVML SM %")
    for share in (25, 50, 75):
        pods = Pods()
        worker = Matmul(device.uuid)
        limit = str(tflops * Decimal(share) / 100)
        pods.add(worker.process.pid, f"w{share}", gpu, tflops_limit=limit, tflops_request="1")
        stop, thread = run_agent(nvml, pods)
        since = nvml.now_us()
        (achieved,), *_ = measure([worker], args.window)
        sm = sm_percent(nvml, device.uuid, worker.process.pid, since)
        stop.set()
        thread.join(10)
        worker.stop()
        print(f"  {share:>5} | {100 * achieved / rate:>6.1f} | {sm:>5.1f}")

    pods = Pods()
    workers = [Matmul(device.uuid) for _ in range(3)]
    for share, worker in zip((25, 50, 75), workers, strict=True):
        pods.add(
            worker.process.pid, f"c{share}", gpu, tflops_limit=str(tflops * share / 100), tflops_request="1"
        )
    stop, thread = run_agent(nvml, pods)
    rates, *_ = measure(workers, args.window)
    stop.set()
    thread.join(10)
    for worker in workers:
        worker.stop()
    shares = ", ".join(f"{s} % → {100 * r / rate:.1f} %" for s, r in zip((25, 50, 75), rates, strict=True))
    print(f"three at once on one GPU (limit → throughput % of baseline): {shares}")

    reactions = []
    for run in range(args.vram_runs):
        pods = Pods()
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": device.uuid}
        hog = subprocess.Popen(
            [sys.executable, "-c", WORKER, "vram"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert hog.stdin is not None and hog.stdout is not None
        assert hog.stdout.readline().strip() == "ready"
        pods.add(hog.pid, f"v{run}", gpu, vram_limit="2Gi", vram_request="1Gi", tflops_limit=str(tflops))
        stop, thread = run_agent(nvml, pods)
        time.sleep(2.0)
        hog.stdin.write("grow\n")
        hog.stdin.flush()
        grown = hog.stdout.readline().split()
        hog.wait(30)
        reactions.append(time.monotonic() - float(grown[1]) if grown else float("nan"))
        stop.set()
        thread.join(10)
    median, worst = 1000 * statistics.median(reactions), 1000 * max(reactions)
    print(
        f"VRAM over-limit → killed ({args.vram_runs} runs): median {median:.0f} ms, max {worst:.0f} ms "
        "(from the allocation; memory sample 500 ms, grace 2 samples)"
    )
    nvml.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
