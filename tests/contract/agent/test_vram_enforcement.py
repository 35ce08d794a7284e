"""VRAM enforcement on the fake NVML with real processes: over-limit workers die, nobody else does.

Ten times in a row a worker's VRAM (as the fake NVML reports it) goes from under to over its
vram-limit; its process must be SIGKILLed within 1 s, after a Warning Event. Meanwhile a process
in no pod and a process in a pod that is not a TensorFusion worker both hold far more VRAM than
any limit and must survive. With --dry-run the agent only reports. With the evict policy the pod
is evicted instead of the process killed. As on a real node, a killed process leaves the fake
NVML's list and the fake /proc the moment it is killed (`_gone_when_killed`), so no later check
can see it again.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from gpupool_incluster.agent.runner import Agent

sys.path.insert(0, str(Path(__file__).parent))
from agent_builders import (
    GIB,
    FakeCluster,
    fake_nvml_agent,
    pod_uid,
    processes,
    running,
    wait_for,
    worker_pod,
    write_cgroups,
    write_fake_nvml,
)

RUNS = 10


def _gone_when_killed(agent: Agent, tmp_path: Path, innocents: list[tuple[int, int, int]]) -> None:
    """Make the agent's SIGKILL also do what the driver and the kernel do at a process's death:
    drop it from NVML's process list and from /proc."""

    def kill(pid: int, sig: int) -> None:
        os.kill(pid, sig)
        if sig == signal.SIGKILL:
            write_fake_nvml(tmp_path / "nvml.json", processes=innocents)
            shutil.rmtree(tmp_path / "proc" / str(pid), ignore_errors=True)

    agent.enforcer.kill = kill


@pytest.mark.slow
def test_over_limit_worker_is_killed_within_a_second_and_innocents_never(tmp_path: Path) -> None:
    with processes(2, busy=False) as (stranger, other_pod):
        write_cgroups(tmp_path / "proc", {stranger.pid: "not-a-pod", other_pod.pid: pod_uid(99)})
        (tmp_path / "proc" / str(stranger.pid) / "cgroup").write_text("0::/user.slice/session-1.scope\n")
        cluster = FakeCluster([worker_pod(99, worker=False, vram_limit="1Gi")])
        innocents = [(stranger.pid, 0, 30 * GIB), (other_pod.pid, 0, 30 * GIB)]
        write_fake_nvml(tmp_path / "nvml.json", processes=innocents)
        agent = fake_nvml_agent(tmp_path, cluster)
        _gone_when_killed(agent, tmp_path, innocents)
        reactions = []
        with running(agent):
            for run in range(RUNS):
                with processes(1, busy=False) as (victim,):
                    cluster.pods = [
                        worker_pod(99, worker=False, vram_limit="1Gi"),
                        worker_pod(run, vram_limit="4Gi"),
                    ]
                    write_cgroups(tmp_path / "proc", {victim.pid: pod_uid(run)})
                    under = [*innocents, (victim.pid, 0, 3 * GIB)]
                    write_fake_nvml(tmp_path / "nvml.json", processes=under)
                    wait_for(
                        lambda run=run: pod_uid(run) in agent.enforcer.workers, "the agent to see the pod"
                    )
                    time.sleep(0.6)  # a memory sample under the limit: nothing happens
                    assert victim.poll() is None
                    write_fake_nvml(tmp_path / "nvml.json", processes=[*innocents, (victim.pid, 0, 5 * GIB)])
                    reactions.append(wait_for(lambda v=victim: v.poll() is not None, "the kill", timeout=5))
                    assert victim.returncode == -9
        print("VRAM reaction times (s):", [round(r, 3) for r in reactions])
        assert max(reactions) < 1.0, f"reaction times {[round(r, 3) for r in reactions]}"
        assert stranger.poll() is None and other_pod.poll() is None
        warnings = [reason for kind, reason, _ in cluster.events if kind == "Warning"]
        assert warnings.count("VRAMLimitExceeded") == RUNS and warnings.count("VRAMLimitKilled") == RUNS


def test_dry_run_reports_and_evict_policy_evicts(tmp_path: Path) -> None:
    with processes(1, busy=False) as (victim,):
        write_cgroups(tmp_path / "proc", {victim.pid: pod_uid(1)})
        write_fake_nvml(tmp_path / "nvml.json", processes=[(victim.pid, 0, 8 * GIB)])
        dry = FakeCluster([worker_pod(1, vram_limit="4Gi")])
        with running(fake_nvml_agent(tmp_path, dry, dry_run=True)):
            wait_for(lambda: any(r == "VRAMLimitKilled" for _, r, _ in dry.events), "a dry-run kill report")
        assert victim.poll() is None
        assert all(message.startswith("dry run: ") for _, _, message in dry.events)
        evicting = FakeCluster([worker_pod(1, vram_limit="4Gi")])
        with running(fake_nvml_agent(tmp_path, evicting, vram_policy="evict")):
            wait_for(lambda: evicting.evicted == ["team/w1"], "the eviction")
        assert victim.poll() is None  # evicted through the API, not killed
        assert evicting.evicted_uids == [pod_uid(1)]  # that very pod: a uid precondition
