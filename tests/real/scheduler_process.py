"""tensor-fusion-scheduler as the chart runs it: the built kube-scheduler with the chart's
KubeSchedulerConfiguration (files/scheduler-config.yaml, rendered), its extender pointed at a
relay's extender port, leader election in the given namespace, authenticating with a kubeconfig
the caller gives (the chart's ServiceAccount, in the relay stories).

Must not: listen anywhere but 127.0.0.1, or outlive `stop()` (its process group is terminated).
"""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpupool.sandbox.cluster.build import binary
from gpupool.sandbox.cluster.controlplane import free_port, terminate
from tests.real.relay_process import chart_scheduler_config


@dataclass
class SchedulerProcess:
    root: Path
    kubeconfig: Path
    namespace: str
    extender_port: int
    secure_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.root / "tensor-fusion-scheduler.log"

    def config(self) -> dict[str, Any]:
        config = chart_scheduler_config(extender_port=self.extender_port, namespace=self.namespace)
        config["clientConnection"] = {"kubeconfig": str(self.kubeconfig)}
        return config

    def start(self, *, timeout: float = 60.0) -> SchedulerProcess:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / "scheduler-config.yaml"
        path.write_text(yaml.safe_dump(self.config(), sort_keys=False))
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(binary("kube-scheduler")),
                    f"--config={path}",
                    f"--authentication-kubeconfig={self.kubeconfig}",
                    f"--authorization-kubeconfig={self.kubeconfig}",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={self.secure_port}",
                    "--v=2",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.root,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"kube-scheduler exited with {self.process.returncode}: {self.tail()}")
            if self._healthy():
                return self
            time.sleep(0.3)
        self.stop()
        raise AssertionError(f"kube-scheduler was not healthy within {timeout:.0f} s: {self.tail()}")

    def _healthy(self) -> bool:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # kube-scheduler's own self-signed health endpoint
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{self.secure_port}/healthz", context=context, timeout=2
            ) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is None:
            return
        terminate(self.process.pid, timeout=10)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


@contextlib.contextmanager
def scheduler(**options: Any) -> Iterator[SchedulerProcess]:
    process = SchedulerProcess(**options)
    try:
        yield process.start()
    finally:
        process.stop()
