"""Bad starts of the real control plane and its build: a missing Go, a failed module download, a port in
use, a component that does not answer — each one line naming the component and its log, and nothing
left running."""

from __future__ import annotations

import os
import signal
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from gpupool.cli.main import main
from gpupool.sandbox.cluster import build as cluster_build
from gpupool.sandbox.cluster.controlplane import ControlPlane, ControlPlaneError, process_alive
from tests.programs import require_built


def test_a_missing_go_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["sandbox", "build", "etcd"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "go: not found on PATH" in err and "Go ≥ 1.26" in err


def test_a_build_called_in_process_gives_the_callers_sigterm_handler_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # the build stops at its first step, after the handler
    mine = signal.getsignal(signal.SIGTERM)
    with pytest.raises(cluster_build.BuildError):
        cluster_build.build(["etcd"], say=lambda _line: None)
    assert signal.getsignal(signal.SIGTERM) is mine


def test_an_unknown_component_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "build", "kubelet"]) == 2
    assert "unknown component kubelet; known: kubernetes, etcd" in capsys.readouterr().err


def test_a_failed_module_download_names_the_component_and_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modules = tmp_path / "modules"
    (modules / "broken").mkdir(parents=True)
    (modules / "broken" / "go.mod").write_text(
        "module gpupool.local/broken\n\ngo 1.26.0\n\nrequire example.invalid/nothing v1.0.0\n"
    )
    (modules / "kubernetes").mkdir()
    (modules / "kubernetes" / "go.mod").write_text("module x\n")
    monkeypatch.setenv("GPUPOOL_CLUSTER_MODULES", str(modules))
    monkeypatch.setenv("GPUPOOL_CLUSTER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "gomodcache"))
    broken = cluster_build.Component("broken", "v0", {"example.invalid/nothing": "nothing"})
    go = cluster_build._go()
    with pytest.raises(cluster_build.BuildError) as failed:
        cluster_build.build_component(
            broken, go=go, toolchain=cluster_build.go_version(go), say=lambda _: None
        )
    log = tmp_path / "cache" / "logs" / "broken.log"
    assert str(failed.value) == f"broken: module download failed — see {log}"
    assert "example.invalid/nothing" in log.read_text()
    assert not (tmp_path / "cache" / "bin" / "nothing").exists()


def _occupied() -> socket.socket:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


def test_a_port_in_use_names_the_component_and_its_log_and_leaves_nothing_running(tmp_path: Path) -> None:
    require_built("etcd", "kube-apiserver")
    with _occupied() as holder:
        plane = ControlPlane(tmp_path, components=("etcd", "kube-apiserver"))
        plane.ports = replace(plane.ports, etcd=holder.getsockname()[1])
        with pytest.raises(ControlPlaneError) as failed:
            plane.start()
    message = str(failed.value)
    assert message.startswith("etcd exited with code")
    assert str(tmp_path / "logs" / "etcd.log") in message
    assert "address already in use" in message
    assert "\n" not in message
    assert not list((tmp_path / "pids").glob("*.pid"))


def test_a_component_that_does_not_answer_is_stopped_with_everything_before_it(tmp_path: Path) -> None:
    require_built("etcd", "kube-apiserver")
    plane = ControlPlane(tmp_path, components=("etcd", "kube-apiserver"))
    started: dict[str, int] = {}
    original = plane._wait

    def impatient(name: str, ready: object, *, timeout: float | None = None) -> None:
        started.update(plane.pids())
        if name == "kube-apiserver":
            return original(name, lambda: False, timeout=0.5)  # type: ignore[arg-type]
        return original(name, ready, timeout=timeout)  # type: ignore[arg-type]

    plane._wait = impatient  # type: ignore[method-assign]
    with pytest.raises(ControlPlaneError) as failed:
        plane.start()
    assert str(failed.value).startswith("kube-apiserver did not become ready within 0 s — see ")
    assert set(started) == {"etcd", "kube-apiserver"}
    assert not any(process_alive(pid) for pid in started.values())
    assert not list((tmp_path / "pids").glob("*.pid"))


def test_an_unknown_component_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ControlPlaneError, match="unknown component kubelet"):
        ControlPlane(tmp_path, components=("kubelet",))
    assert os.listdir(tmp_path) == []
