"""`gpupool relay serve` as a process against the embedded API server: HTTPS by default, HTTP on request;
and the route groups each listener gets: /metrics and the extender never on the Service port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> dict[str, object]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"relay exited with {process.returncode}")
        try:
            answer: dict[str, object] = httpx.get(url, verify=False, timeout=1).json()
            if answer.get("synced"):
                return answer
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("relay did not become healthy and synced")


@pytest.mark.parametrize("insecure", [False, True])
def test_relay_serve_process(insecure: bool, tmp_path: Path) -> None:
    with EmbeddedKubeAPI() as api:
        port = _free_port()
        command = [
            sys.executable,
            "-m",
            "gpupool.cli.main",
            "relay",
            "serve",
            "--kubeconfig",
            str(api.kubeconfig_path),
            "--listen",
            f"127.0.0.1:{port}",
        ]
        if insecure:
            command.append("--insecure-http")
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
        )
        try:
            scheme = "http" if insecure else "https"
            assert _wait_healthy(f"{scheme}://127.0.0.1:{port}/healthz", process)["status"] == "ok"
            if not insecure:
                with pytest.raises(httpx.HTTPError):
                    httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        finally:
            process.terminate()
            process.wait(15)


@pytest.mark.parametrize("metrics_listen", [None, ("0.0.0.0", 9090)])
@pytest.mark.parametrize("api_access", ["none", "token", "open"])
def test_metrics_are_never_served_on_the_service_port(
    metrics_listen: tuple[str, int] | None, api_access: str
) -> None:
    from gpupool_incluster.relay.serve import RelayOptions, _surfaces

    options = RelayOptions(
        kubeconfig=None, host="0.0.0.0", port=8443, metrics_listen=metrics_listen, api_access=api_access
    )
    service, loopback = _surfaces(options)
    assert "metrics" not in service and "extender" not in service
    assert ("metrics" in loopback) == (metrics_listen is None)  # else on --metrics-listen
    assert ("api" in service) == (api_access != "none")
