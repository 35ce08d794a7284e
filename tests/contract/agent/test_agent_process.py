"""`gpupool agent run` as a real process against the embedded API server: killing it mid-throttle
leaves no process stopped.

A CPU-bound worker pod limited to 25 % of its fake GPU is being duty-cycled by the agent; the test
waits until the worker is caught stopped (state T), then kills the agent — SIGKILL (the guardian
process resumes the worker) or SIGTERM (the agent resumes it itself) — and checks the worker runs
again at once and stays running. The agent also publishes the GPU object and the GPUNode. The
guardian run as its own container (`gpupool agent guardian --fifo`) resumes what a SIGKILLed agent
— its whole container, as far as the guardian can tell — left stopped, and serves the next agent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.core.model.foreign import Pod
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.scheduler.pod_record import record_annotations
from gpupool_incluster.agent.deviceplugin import api_pb2 as pb
from gpupool_incluster.agent.nvml_fake import FakeNvml
from gpupool_incluster.agent.procs import CgroupLocator
from gpupool_incluster.agent.runner import Agent, AgentOptions

sys.path.insert(0, str(Path(__file__).parent))
from agent_builders import (
    FakeCluster,
    FakeKubelet,
    T,
    gpu_uuid,
    pod_uid,
    process_state,
    processes,
    wait_for,
    worker_pod,
    write_cgroups,
    write_fake_nvml,
)

GPU0 = "gpu-00000000-1111-2222-3333-444444444444"


@pytest.fixture
def sandbox() -> Iterator[tuple[EmbeddedKubeAPI, Any]]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        try:
            yield api, api_client
        finally:
            api_client.close()


def _worker_pod(api_client: Any, *, index_resource: bool = False) -> str:
    core = client.CoreV1Api(api_client)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "trainer",
            "namespace": "default",
            "labels": {T + "enabled": "true"},
            "annotations": {T + "tflops-request": "20", T + "tflops-limit": "78", T + "vram-limit": "4Gi"},
        },
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "cuda"}]},
    }
    if index_resource:
        body["spec"]["containers"][0]["resources"] = {"limits": {T + "index_0": "1"}}  # type: ignore[index]
    created = core.create_namespaced_pod("default", body)
    stored = Pod.model_validate(api_client.sanitize_for_serialization(created))
    record = record_annotations(stored, "node-a", [GPU0])  # what the relay's bind writes
    core.patch_namespaced_pod("trainer", "default", {"metadata": {"annotations": record}})
    return str(created.metadata.uid)


def _agent(api: EmbeddedKubeAPI, tmp_path: Path, plugin_dir: str = "off") -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "gpupool.cli.main", "agent", "run", "--node", "node-a",
        "--kubeconfig", str(api.kubeconfig_path), "--nvml", f"fake:{tmp_path / 'nvml.json'}",
        "--proc-root", str(tmp_path / "proc"), "--metrics", "off", "--device-plugin-dir", plugin_dir,
        "--discovery-interval", "0.3",
    ]  # fmt: skip
    log = (tmp_path / "agent.log").open("wb")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def _log(tmp_path: Path) -> str:
    return (tmp_path / "agent.log").read_text()[-3000:]


def _caught_stopped(pid: int) -> bool:
    return process_state(pid) == "T"


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_agent_leaves_no_process_stopped(
    sandbox: tuple[EmbeddedKubeAPI, Any], tmp_path: Path, how: signal.Signals
) -> None:
    api, api_client = sandbox
    uid = _worker_pod(api_client)
    with processes(1) as (worker,):
        write_cgroups(tmp_path / "proc", {worker.pid: uid})
        write_fake_nvml(tmp_path / "nvml.json", processes=[(worker.pid, 0, 1024)])
        agent = _agent(api, tmp_path)
        try:
            try:  # a cold start under load (kubernetes, pydantic, the first discovery) can take a while
                wait_for(lambda: _caught_stopped(worker.pid), "the agent to stop the worker", timeout=60)
            except AssertionError as late:
                raise AssertionError(f"{late}; agent exit {agent.poll()}, log:\n{_log(tmp_path)}") from None
            os.kill(agent.pid, how)
            agent.wait(10)
        finally:
            if agent.poll() is None:
                agent.kill()
        wait_for(lambda: process_state(worker.pid) not in ("T", ""), "the worker to run again", timeout=3)
        for _ in range(50):  # and it stays running: nobody is cycling it any more
            assert process_state(worker.pid) != "T"
            time.sleep(0.02)
        custom = client.CustomObjectsApi(api_client)
        gpu = custom.get_cluster_custom_object("tensor-fusion.ai", "v1", "gpus", GPU0)
        assert gpu["status"]["phase"] == "Running" and gpu["status"]["capacity"]["tflops"] == "312"
        node = custom.get_cluster_custom_object("tensor-fusion.ai", "v1", "gpunodes", "node-a")
        assert node["status"]["totalGPUs"] == 1


def test_a_new_agent_resumes_workers_a_previous_one_left_stopped(tmp_path: Path) -> None:
    """The guardian dies with the agent when the whole container is killed: the next agent resumes."""
    with processes(2) as (worker, stranger):
        write_cgroups(tmp_path / "proc", {worker.pid: pod_uid(0)})
        write_fake_nvml(tmp_path / "nvml.json", processes=[(worker.pid, 0, 1024), (stranger.pid, 0, 1024)])
        os.kill(worker.pid, signal.SIGSTOP)
        os.kill(stranger.pid, signal.SIGSTOP)  # not a worker's: not ours to resume
        wait_for(lambda: process_state(worker.pid) == "T", "the worker to be stopped")
        agent = Agent(
            AgentOptions(node="node-a"),
            nvml=FakeNvml(tmp_path / "nvml.json"),
            cluster=FakeCluster([worker_pod(0, tflops_limit="312")]),
            locator=CgroupLocator(tmp_path / "proc"),
        )
        try:
            agent.run_slow_once()
        finally:
            agent.close()
        wait_for(lambda: process_state(worker.pid) not in ("T", ""), "the worker to run again", timeout=3)
        assert process_state(stranger.pid) == "T"


def test_served_device_plugin_allocates_from_the_clusters_pods(
    sandbox: tuple[EmbeddedKubeAPI, Any], tmp_path: Path
) -> None:
    api, api_client = sandbox
    _worker_pod(api_client, index_resource=True)
    write_fake_nvml(tmp_path / "nvml.json", gpus=2)
    with tempfile.TemporaryDirectory(prefix="dp-", dir="/tmp") as scratch:
        kubelet = FakeKubelet(Path(scratch))
        agent = _agent(api, tmp_path, plugin_dir=scratch)
        try:
            try:
                wait_for(lambda: len(kubelet.registered) == 16, "the agent's 16 registrations", timeout=60)
            except AssertionError as late:
                raise AssertionError(f"{late}; agent exit {agent.poll()}, log:\n{_log(tmp_path)}") from None
            channel, calls = kubelet.dial(Path(scratch) / kubelet.registered[0].endpoint)
            request = pb.AllocateRequest(
                container_requests=[pb.ContainerAllocateRequest(devices_ids=["index_0-000"])]
            )
            with channel:
                envs = calls["Allocate"](request, timeout=10).container_responses[0].envs
            assert envs["NVIDIA_VISIBLE_DEVICES"] == gpu_uuid(0) and envs["GPUPOOL_GPU_IDS"] == GPU0
        finally:
            agent.terminate()
            agent.wait(10)
            kubelet.server.stop(0)


_AGENT_ON_FIFO = """
import sys, time
from pathlib import Path
from gpupool_incluster.agent.procs import process_start
from gpupool_incluster.agent.throttle import Guardian
guardian = Guardian(Path(sys.argv[1]))
assert guardian.pid is None, "fell back to a child guardian"
pid = int(sys.argv[2])
guardian.record("S", pid, process_start(pid))
print("recorded", flush=True)
time.sleep(60)
"""


def test_the_guardian_container_outlives_a_killed_agent_and_serves_the_next(tmp_path: Path) -> None:
    """Issue 22, Why 10: a killed agent container used to take the guardian with it."""
    fifo = tmp_path / "guardian.fifo"
    guardian = subprocess.Popen(
        [sys.executable, "-m", "gpupool.cli.main", "agent", "guardian", "--fifo", str(fifo)]
    )
    try:
        wait_for(fifo.exists, "the guardian to create its FIFO")
        with processes(1) as (worker,):
            for round_ in range(2):  # a second agent after the first was killed: still guarded
                os.kill(worker.pid, signal.SIGSTOP)
                wait_for(lambda: process_state(worker.pid) == "T", "the worker to be stopped")
                agent = subprocess.Popen(
                    [sys.executable, "-c", _AGENT_ON_FIFO, str(fifo), str(worker.pid)], stdout=subprocess.PIPE
                )
                assert agent.stdout is not None and agent.stdout.readline() == b"recorded\n", (
                    f"round {round_}"
                )
                os.kill(agent.pid, signal.SIGKILL)
                agent.wait(10)
                wait_for(
                    lambda: process_state(worker.pid) not in ("T", ""), f"the worker to run again ({round_})"
                )
                assert guardian.poll() is None
        guardian.terminate()
        assert guardian.wait(10) == 0
    finally:
        if guardian.poll() is None:
            guardian.kill()
            guardian.wait(5)
