"""`/metrics` shows what the loops did (per GPU and per worker, TensorFusion-like names), and the
`gpupool agent` command reads well: --help, and one clear line (exit 2) for each bad input."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from gpupool.cli.main import main
from gpupool_incluster.agent.nvml_fake import FakeNvml
from gpupool_incluster.agent.procs import CgroupLocator
from gpupool_incluster.agent.runner import Agent, AgentOptions

sys.path.insert(0, str(Path(__file__).parent))
from agent_builders import (
    GIB,
    FakeCluster,
    pod_uid,
    processes,
    wait_for,
    worker_pod,
    write_cgroups,
    write_fake_nvml,
)


def _value(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} {labels} not in /metrics")


@pytest.mark.slow
def test_metrics_show_throttling_and_kills(tmp_path: Path) -> None:
    with processes(1) as (busy,), processes(1, busy=False) as (hog,):
        write_cgroups(tmp_path / "proc", {busy.pid: pod_uid(0), hog.pid: pod_uid(1)})
        write_fake_nvml(tmp_path / "nvml.json", processes=[(busy.pid, 0, GIB), (hog.pid, 0, 9 * GIB)])
        cluster = FakeCluster([worker_pod(0, tflops_limit="78"), worker_pod(1, vram_limit="4Gi")])
        agent = Agent(
            AgentOptions(node="node-a", discovery_interval_s=0.5),
            nvml=FakeNvml(tmp_path / "nvml.json"),
            cluster=cluster,
            locator=CgroupLocator(tmp_path / "proc"),
        )
        port = agent.metrics.serve("127.0.0.1", 0, access=None)
        stop = threading.Event()
        loop = threading.Thread(target=agent.run, args=(stop,), daemon=True)
        loop.start()
        try:
            wait_for(lambda: hog.poll() is not None, "the VRAM hog to be killed")
            time.sleep(1.5)
            text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        finally:
            stop.set()
            loop.join(10)
    uuid = "GPU-00000000-1111-2222-3333-444444444444"
    assert _value(text, "tf_worker_vram_kills_total", worker="w1") == 1.0
    assert _value(text, "tf_worker_throttled_seconds_total", worker="w0") > 0.3
    assert _value(text, "tf_worker_compute_limit_percentage", worker="w0", uuid=uuid) == pytest.approx(25.0)
    assert _value(text, "tf_worker_vram_limit_bytes", worker="w1", uuid=uuid) == 4 * GIB
    assert 0 < _value(text, "tf_gpu_usage_compute_percentage", node="node-a", uuid=uuid) <= 100
    assert _value(text, "tf_agent_actions_total", action="vram-kill") == 1.0
    assert _value(text, "tf_agent_actions_total", action="throttle") >= 1.0
    assert _value(text, "tf_gpu_usable", uuid=uuid) == 1.0
    assert _value(text, "tf_gpu_memory_total_bytes", uuid=uuid) == 40 * GIB


def test_help_lists_the_options() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpupool.cli.main", "agent", "run", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    for option in (
        "--node",
        "--kubeconfig",
        "--nvml",
        "--vram-policy",
        "--dry-run",
        "--device-plugin-dir",
        "--metrics-auth",
        "--metrics-audience",
    ):
        assert option in result.stdout
    assert "--proc-root" not in result.stdout  # a test hook, not a user option


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["agent"], "usage: gpupool agent run"),
        (["agent", "run", "--node", "n", "--nvml", "cuda"], "--nvml 'cuda' must be 'real' or 'fake:FILE'"),
        (
            ["agent", "run", "--node", "n", "--nvml", "fake:/nowhere.json"],
            "--nvml fake:/nowhere.json: no such file",
        ),
        (["agent", "run", "--node", "n", "--kubeconfig", "/nowhere"], "--kubeconfig /nowhere: no such file"),
        (["agent", "run", "--node", "n", "--metrics", "9400"], "--metrics '9400' must be HOST:PORT"),
        (
            ["agent", "run", "--node", "n", "--metrics-auth", "open"],
            "--metrics-auth 'open' must be 'token' or 'none'",
        ),
        (["agent", "run", "--node", "n", "--metrics-audience", " "], "--metrics-audience must not be empty"),
        (
            ["agent", "run", "--node", "n", "--metrics-auth", "none", "--metrics-audience", "a"],
            "--metrics-audience needs --metrics-auth token",
        ),
        (["agent", "run", "--node", "n", "--device-plugin-dir", "/nowhere"], "--device-plugin-dir /nowhere"),
        (
            ["agent", "run", "--node", "n", "--compute-interval", "0", "--device-plugin-dir", "off"],
            "compute interval",
        ),
        (
            ["agent", "run", "--node", "n", "--vram-grace", "0", "--device-plugin-dir", "off"],
            "--vram-grace 0",
        ),
    ],
)
def test_bad_input_is_one_clear_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_no_cluster_credentials_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_fake_nvml(tmp_path / "nvml.json")
    argv = [
        "agent",
        "run",
        "--node",
        "n",
        "--nvml",
        f"fake:{tmp_path / 'nvml.json'}",
        "--device-plugin-dir",
        "off",
    ]
    assert main([*argv, "--metrics", "off"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the cluster with the in-cluster service account" in err and err.count("\n") == 1
