"""Closed-loop compute enforcement on the fake NVML: real CPU-bound processes, real SIGSTOP/SIGCONT.

The agent runs its loops in a thread against a fake GPU whose utilisation is measured from
/proc/<pid>/schedstat (see `nvml_fake`); the test measures each worker's share itself, from the
same counters, over a 20 s window after a short settling time. On GPU 0 three workers are limited
to 25 / 50 / 75 % of an A100 (312 TFLOPS: tflops-limit 78 / 156 / 234, small requests); on GPU 1 a
`critical` and a `low` worker each request 60 % (more than the GPU between them), so the critical
one keeps its 60 % and the low one yields to the 40 % left. Both GPUs run at the same time.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from gpupool_incluster.agent.nvml_fake import FakeNvml, runnable_ns
from gpupool_incluster.agent.procs import CgroupLocator
from gpupool_incluster.agent.runner import Agent, AgentOptions

sys.path.insert(0, str(Path(__file__).parent))
from agent_builders import (
    FakeCluster,
    pod_uid,
    process_state,
    processes,
    wait_for,
    worker_pod,
    write_cgroups,
    write_fake_nvml,
)

GPU0 = ("gpu-00000000-1111-2222-3333-444444444444",)
GPU1 = ("gpu-00000001-1111-2222-3333-444444444444",)
SETTLE_S = 3.0
WINDOW_S = 20.0


@pytest.mark.slow
def test_shares_track_limits_and_qos_decides_who_yields(tmp_path: Path) -> None:
    with processes(5) as workers:
        pids = [w.pid for w in workers]
        write_cgroups(tmp_path / "proc", {pid: pod_uid(n) for n, pid in enumerate(pids)})
        write_fake_nvml(
            tmp_path / "nvml.json",
            gpus=2,
            processes=[(pids[0], 0, 1), (pids[1], 0, 1), (pids[2], 0, 1), (pids[3], 1, 1), (pids[4], 1, 1)],
        )
        pods = [
            worker_pod(0, tflops_request="20", tflops_limit="78", gpus=GPU0),
            worker_pod(1, tflops_request="20", tflops_limit="156", gpus=GPU0),
            worker_pod(2, tflops_request="20", tflops_limit="234", gpus=GPU0),
            worker_pod(3, tflops_request="187.2", tflops_limit="312", qos="critical", gpus=GPU1),
            worker_pod(4, tflops_request="187.2", tflops_limit="312", qos="low", gpus=GPU1),
        ]
        agent = Agent(
            AgentOptions(node="node-a", discovery_interval_s=1.0),
            nvml=FakeNvml(tmp_path / "nvml.json"),
            cluster=FakeCluster(pods),
            locator=CgroupLocator(tmp_path / "proc"),
        )
        stop = threading.Event()
        loop = threading.Thread(target=agent.run, args=(stop,), daemon=True)
        loop.start()
        try:
            time.sleep(SETTLE_S)
            start = {pid: (time.monotonic_ns(), runnable_ns(pid)) for pid in pids}
            time.sleep(WINDOW_S)
            achieved = {}
            for pid in pids:
                began, runnable = start[pid]
                now, later = time.monotonic_ns(), runnable_ns(pid)
                assert runnable is not None and later is not None
                achieved[pid] = 100.0 * (later - runnable) / (now - began)
        finally:
            stop.set()
            loop.join(10)
        expected = [25.0, 50.0, 75.0, 60.0, 40.0]
        report = {f"w{n}": round(achieved[pid], 1) for n, pid in enumerate(pids)}
        for n, pid in enumerate(pids):
            assert abs(achieved[pid] - expected[n]) <= 5.0, f"w{n}: wanted {expected[n]} ± 5, got {report}"
        # Leaving resumed everyone.
        wait_for(lambda: all(process_state(pid) != "T" for pid in pids), "every worker to run again", 3)
