"""`gpupool sandbox`: the embedded Kubernetes API server, moto's EC2 and the ECS endpoint, run together.

`run_foreground` serves until SIGINT/SIGTERM; `start_background` launches the same thing as
a detached daemon (`python -m gpupool.sandbox.daemon`, own session, pid file in the
directory) and returns once both servers answer; `stop` ends it; `status` reports it. The
directory holds `kubeconfig`, `env` (KEY=VALUE lines), `sandbox.pid`, `state.json`, and the
daemon's `sandbox.log`. With `real=True` the Kubernetes API is the real control plane
(`gpupool.sandbox.cluster`: kube-apiserver, etcd, controllers, KWOK, Karpenter) under
`cluster/`, its components' PIDs in `cluster/pids/` so `stop` ends them even when the daemon died.

Must not: print (the CLI does) or swallow a failure to start: every bad state is a
`SandboxError` whose message says what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpupool.sandbox.ecs_server import EcsEndpoint
from gpupool.sandbox.files import (
    SandboxFiles,
    is_sandbox_process,
    process_alive,
    sandbox_env,
    write_env,
)
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.moto_ec2 import MotoEC2


class SandboxError(Exception):
    """A sandbox in a state the request cannot act on; the message is one clear line."""


@dataclass(frozen=True)
class SandboxInfo:
    files: SandboxFiles
    pid: int
    kube_url: str
    aws_url: str
    started_at: str
    ecs_url: str = ""
    real: bool = False


def _info(files: SandboxFiles) -> SandboxInfo | None:
    state = files.read_state()
    if state is None:
        return None
    return SandboxInfo(
        files,
        int(state["pid"]),
        str(state["kube_url"]),
        str(state["aws_url"]),
        str(state["started_at"]),
        str(state.get("ecs_url") or ""),
        bool(state.get("real")),
    )


def _refuse_if_running(files: SandboxFiles) -> None:
    pid = files.read_pid()
    if pid is None:
        return
    if is_sandbox_process(pid):
        raise SandboxError(
            f"a sandbox is already running in {files.root} (pid {pid}); stop it with "
            f"`gpupool sandbox down --dir {files.root}`"
        )
    files.clear_runtime()  # stale: the process that wrote it is gone


def cluster_root(files: SandboxFiles) -> Path:
    """Where `--real` keeps the control plane's PKI, data, logs and PIDs."""
    return files.root / "cluster"


@contextlib.contextmanager
def _kube_api(files: SandboxFiles, *, real: bool) -> Iterator[str]:
    """The sandbox's Kubernetes API (its URL), with `files.kubeconfig` pointing at it."""
    if not real:
        with EmbeddedKubeAPI(kubeconfig_path=files.kubeconfig) as api:
            yield api.url
        return
    from gpupool.sandbox.cluster.controlplane import ControlPlane, ControlPlaneError

    plane = ControlPlane(cluster_root(files), say=lambda line: print(line, flush=True))
    try:
        plane.start()
    except ControlPlaneError as error:
        raise SandboxError(str(error)) from error
    try:
        shutil.copyfile(plane.kubeconfig, files.kubeconfig)
        os.chmod(files.kubeconfig, 0o600)
        yield plane.url
    finally:
        plane.stop()


def run_foreground(
    files: SandboxFiles,
    *,
    announce: Callable[[SandboxInfo], None] = lambda info: None,
    stop: threading.Event | None = None,
    real: bool = False,
) -> None:
    """Serve until SIGINT/SIGTERM (or `stop` is set); clean the pid and state files after."""
    _refuse_if_running(files)
    files.root.mkdir(parents=True, exist_ok=True)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda _signum, _frame: stop.set())
    if real:  # seven processes start in turn: `down` must find a sandbox that is still starting
        files.pid.write_text(f"{os.getpid()}\n")
    try:
        with _kube_api(files, real=real) as kube_url, MotoEC2() as ec2, EcsEndpoint() as ecs:
            write_env(files, sandbox_env(files, kube_url=kube_url, aws_url=ec2.url, ecs_url=ecs.url))
            info = SandboxInfo(
                files,
                os.getpid(),
                kube_url,
                ec2.url,
                datetime.now(UTC).isoformat(timespec="seconds"),
                ecs.url,
                real,
            )
            state = {
                "pid": info.pid,
                "kube_url": info.kube_url,
                "aws_url": info.aws_url,
                "ecs_url": info.ecs_url,
                "started_at": info.started_at,
                "real": real,
            }
            files.pid.write_text(f"{info.pid}\n")
            files.state.write_text(json.dumps(state, indent=2) + "\n")  # written last: the "ready" mark
            announce(info)
            while not stop.wait(0.5):
                pass
    finally:
        files.clear_runtime()


def _answers(url: str, *, real: bool = False) -> bool:
    context = None
    if real:  # served with the control plane's own CA: any TLS answer means it is up
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        urllib.request.urlopen(url, timeout=2, context=context).close()
    except urllib.error.HTTPError:
        return True  # any HTTP answer means the server is up
    except OSError:
        return False
    return True


def _log_tail(files: SandboxFiles, lines: int = 15) -> str:
    try:
        return "\n".join(files.log.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def start_background(files: SandboxFiles, *, timeout: float = 60.0, real: bool = False) -> SandboxInfo:
    """Launch the daemon and return once the API server, moto and the ECS endpoint answer."""
    _refuse_if_running(files)
    files.root.mkdir(parents=True, exist_ok=True)
    if real:
        timeout = max(timeout, 180.0)  # the real control plane starts seven processes in turn
    with files.log.open("ab") as log:
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpupool.sandbox.daemon",
                "--dir",
                str(files.root),
                *(["--real"] if real else []),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = daemon.poll()
        if code is not None:
            raise SandboxError(
                f"the sandbox exited while starting (code {code}); its log says:\n{_log_tail(files)}"
            )
        info = _info(files)
        if (
            info is not None
            and info.pid == daemon.pid
            and _answers(f"{info.kube_url}/version", real=info.real)
            and _answers(info.aws_url)
            and _answers(info.ecs_url)
        ):
            return info
        time.sleep(0.1)
    daemon.kill()
    daemon.wait(timeout=5)
    _stop_cluster(files)
    files.clear_runtime()
    raise SandboxError(
        f"the sandbox did not answer within {timeout:.0f} s; its log says:\n{_log_tail(files)}"
    )


def _reap(pid: int) -> None:
    """Collect the exit status when the daemon is our own child (tests start it in-process)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _stop_cluster(files: SandboxFiles) -> None:
    """End the real control plane's components, whatever became of the daemon that started them."""
    if (cluster_root(files) / "pids").is_dir():
        from gpupool.sandbox.cluster.controlplane import stop_recorded

        stop_recorded(cluster_root(files))


def stop(files: SandboxFiles, *, timeout: float = 30.0) -> int:
    """Stop the sandbox running in `files.root`; returns the pid that was stopped."""
    pid = files.read_pid()
    if pid is None:
        raise SandboxError(f"no sandbox is running in {files.root} (no pid file)")
    if not is_sandbox_process(pid):
        files.clear_runtime()
        raise SandboxError(
            f"no sandbox is running in {files.root} (removed a stale pid file naming pid {pid})"
        )
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not process_alive(pid):
            _stop_cluster(files)
            files.clear_runtime()
            return pid
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    _reap(pid)
    _stop_cluster(files)
    files.clear_runtime()
    return pid


@dataclass(frozen=True)
class SandboxStatus:
    running: SandboxInfo | None
    stale_pid: int | None = None
    starting_pid: int | None = None  # alive, but has not written its state yet


def status(files: SandboxFiles) -> SandboxStatus:
    pid = files.read_pid()
    if pid is None:
        return SandboxStatus(None)
    if not is_sandbox_process(pid):
        return SandboxStatus(None, stale_pid=pid)
    info = _info(files)
    return SandboxStatus(info) if info is not None else SandboxStatus(None, starting_pid=pid)
