"""A pod that asks for an index resource without an allocation recorded for it never keeps GPUs (issue 33).

The device plugin no longer refuses a recorded pod's Allocate because an unrecorded claimant is
pending beside it (`tests/unit/agent/test_forged_allocations.py`); since the kubelet does not say
which pod an Allocate is for, the unrecorded pod's container may then start with the recorded pod's
grant. Here the agent runs on the fake NVML with real processes: a process of such a pod on a GPU is
SIGKILLed within a second; a worker's process, a process of a labelled pod that asks for no index
resource, and a process in no pod are left alone; with --dry-run nothing is killed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpupool.core.model.foreign import Pod

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

T = "tensor-fusion.ai/"


def squatter(n: int) -> Pod:
    """A labelled pod asking for index_0, with no record (placed around the scheduler)."""
    pod = worker_pod(n, worker=False)
    body = pod.model_dump(by_alias=True, exclude_none=True)
    body["spec"]["containers"][0]["resources"] = {"limits": {T + "index_0": "1"}}
    return Pod.model_validate(body)


def test_a_pod_using_gpus_without_a_record_has_its_processes_killed_and_no_one_else(tmp_path: Path) -> None:
    with processes(4, busy=False) as (intruder, worker, plain, stranger):
        write_cgroups(
            tmp_path / "proc",
            {intruder.pid: pod_uid(1), worker.pid: pod_uid(2), plain.pid: pod_uid(3), stranger.pid: "x"},
        )
        (tmp_path / "proc" / str(stranger.pid) / "cgroup").write_text("0::/user.slice/session-1.scope\n")
        cluster = FakeCluster([squatter(1), worker_pod(2), worker_pod(3, worker=False)])
        on_gpu = [(p.pid, 0, GIB) for p in (intruder, worker, plain, stranger)]
        write_fake_nvml(tmp_path / "nvml.json", processes=on_gpu)
        agent = fake_nvml_agent(tmp_path, cluster)
        with running(agent):
            took = wait_for(lambda: intruder.poll() is not None, "the intruder's kill", timeout=5)
        assert took < 1.0 and intruder.returncode == -9
        assert worker.poll() is None and plain.poll() is None and stranger.poll() is None
        assert agent.enforcer.unrecorded == {pod_uid(1): ("team", "w1")}


def test_dry_run_kills_nothing(tmp_path: Path) -> None:
    with processes(1, busy=False) as (intruder,):
        write_cgroups(tmp_path / "proc", {intruder.pid: pod_uid(1)})
        write_fake_nvml(tmp_path / "nvml.json", processes=[(intruder.pid, 0, GIB)])
        agent = fake_nvml_agent(tmp_path, FakeCluster([squatter(1)]), dry_run=True)
        with running(agent):
            wait_for(lambda: pod_uid(1) in agent.enforcer.unrecorded, "the agent to see the pod")
            wait_for(
                lambda: agent.metrics.actions.labels("node-a", "unrecorded-kill")._value.get() > 0,
                "the dry-run report",
            )
        assert intruder.poll() is None
