"""The sandbox directory: where its kubeconfig, env file, pid file, state and log live, and
how to tell whether the process a pid file names is still our sandbox.

Must not: start or stop servers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpupool.sandbox.ecs_network import DEFAULT_REGION
from gpupool.sandbox.ecs_server import SANDBOX_ACCESS_KEY_ID, SANDBOX_ACCESS_KEY_SECRET

DEFAULT_DIR = Path(".gpupool/sandbox")
REGION = "us-east-1"
ALIBABA_REGION = DEFAULT_REGION


@dataclass(frozen=True)
class SandboxFiles:
    root: Path

    @classmethod
    def at(cls, directory: Path | str | None) -> SandboxFiles:
        return cls(Path(directory or DEFAULT_DIR).resolve())

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def env(self) -> Path:
        return self.root / "env"

    @property
    def pid(self) -> Path:
        return self.root / "sandbox.pid"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def log(self) -> Path:
        return self.root / "sandbox.log"

    def read_pid(self) -> int | None:
        try:
            return int(self.pid.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def read_state(self) -> dict[str, Any] | None:
        try:
            state = json.loads(self.state.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    def clear_runtime(self) -> None:
        """Forget a sandbox that is gone: pid and state go; kubeconfig, env and log stay."""
        for path in (self.pid, self.state):
            path.unlink(missing_ok=True)


def sandbox_env(files: SandboxFiles, *, kube_url: str, aws_url: str, ecs_url: str = "") -> dict[str, str]:
    """What a shell or a test needs to reach the sandbox (dummy AWS credentials, as moto wants;
    the ECS endpoint's URL, region and access key under alibabacloud-credentials' own names)."""
    alibaba = (
        {
            "GPUPOOL_ECS_ENDPOINT": ecs_url,
            "ALIBABA_CLOUD_REGION_ID": ALIBABA_REGION,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": SANDBOX_ACCESS_KEY_ID,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SANDBOX_ACCESS_KEY_SECRET,
        }
        if ecs_url
        else {}
    )
    return {
        "KUBECONFIG": str(files.kubeconfig),
        "GPUPOOL_KUBE_API_URL": kube_url,
        "AWS_ENDPOINT_URL": aws_url,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "GPUPOOL_SANDBOX_DIR": str(files.root),
        # The cluster the functions manage: the name TensorFusion's chart (and `gpupool demo`)
        # gives its TensorFusionCluster. Edit the file to manage another.
        "GPUPOOL_CLUSTER_NAME": "tensor-fusion",
        **alibaba,
    }


def write_env(files: SandboxFiles, env: dict[str, str]) -> None:
    files.env.write_text("".join(f"{key}={value}\n" for key, value in env.items()))


def process_alive(pid: int) -> bool:
    """True when `pid` runs and is not a zombie (a zombie has exited but not been reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def is_sandbox_process(pid: int) -> bool:
    """Alive and running our daemon (guards against a recycled pid)."""
    if not process_alive(pid):
        return False
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return True
    return b"gpupool" in command
