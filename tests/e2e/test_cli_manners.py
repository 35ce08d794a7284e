"""Bad input and a bad environment are each one clear line with the right exit status, never a
traceback: a mistyped flag names the closest one the command has ("did you mean"); an empty manifest
fails `gpupool validate`; an API server whose certificate the kubeconfig's CA did not sign, or that
speaks no TLS, is named as such (not `MaxRetryError`); a module a partial install lacks names the
extra that brings it; an unknown `sandbox build` component lists the known ones. A replayed relay
delivery answered `duplicate` says why nothing was done and how to act again.
"""

from __future__ import annotations

import datetime as dt
import http.server
import os
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

GPUPOOL = str(Path(sys.executable).parent / "gpupool")


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | (env or {})
    return subprocess.run([GPUPOOL, *args], capture_output=True, text=True, timeout=120, env=environment)


def _one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result
    assert "Traceback" not in result.stderr and "usage:" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["status", "--pooll", "a"],
            "gpupool status: error: unrecognized arguments --pooll a; did you mean --pool?",
        ),
        (["validate", "--quite", "x.yaml"], "did you mean --quiet?"),
        (["sandbox", "build", "--verbos"], "gpupool sandbox build: error: unrecognized argument --verbos"),
        (["demo", "--jsn"], "did you mean --json?"),
    ],
)
def test_a_mistyped_flag_is_one_line_with_the_closest_flag(args: list[str], expected: str) -> None:
    assert expected in _one_line(_run(*args), 2)


def test_an_unknown_build_component_lists_the_known_ones() -> None:
    line = _one_line(_run("sandbox", "build", "helmm"), 2)
    assert line.startswith("gpupool sandbox error: unknown component helmm; known: kubernetes") or (
        "unknown component helmm; known:" in line and "helm" in line and "sam" in line and "promtool" in line
    ), line


@pytest.mark.parametrize("text", ["", "# nothing but a comment\n", "---\n---\n"])
def test_an_empty_manifest_fails_validate(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    line = _one_line(_run("validate", str(path)), 2)
    said = "no manifest in it (empty, or only comments) — nothing to validate"
    assert line == f"gpupool validate: error: {path}: {said}"


def test_a_missing_extra_is_named_not_a_traceback(tmp_path: Path) -> None:
    """`pip install '.[aws]'` then `gpupool demo`: moto (the demo's EC2) is missing."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import importlib.abc, sys\n"
        "class Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'moto':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Missing())\n"
    )
    line = _one_line(_run("demo", env={"PYTHONPATH": str(tmp_path)}), 1)
    said = "this needs moto, which the installed extras do not bring: pip install 'gpupool[dev]'"
    assert line == f"gpupool demo: error: {said}"


def test_the_extra_is_read_from_the_installed_metadata() -> None:
    from gpupool.cli.extras import extras_bringing, missing_module_message

    assert extras_bringing("rich")[0] == "cli"
    assert (
        extras_bringing("alibabacloud_ecs20140526") == ["alibaba", "dev"]
        or extras_bringing("alibabacloud_ecs20140526")[0] == "alibaba"
    )
    assert "gpupool[incluster]" in (missing_module_message(ModuleNotFoundError("x", name="starlette")) or "")
    assert missing_module_message(ModuleNotFoundError("x", name="gpupool.nothing")) is None


# ---- the API server's TLS ----------------------------------------------------------------------
def _pair(directory: Path, host: str) -> tuple[Path, Path]:
    from gpupool_incluster.relay.serve import self_signed_pair

    directory.mkdir()
    return self_signed_pair(host, directory, now=dt.datetime.now(dt.UTC))


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on loopback with a certificate of its own; (url, its certificate)."""
    cert, key = _pair(tmp_path / "server", "127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()


def _kubeconfig(path: Path, server: str, ca: Path | None) -> Path:
    import base64

    cluster: dict[str, str] = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def test_a_certificate_another_ca_signed_is_one_line(tls_server: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = tls_server
    other, _ = _pair(tmp_path / "other", "127.0.0.1")
    line = _one_line(_run("status", "--kubeconfig", str(_kubeconfig(tmp_path / "kc", url, other))), 2)
    assert line == (
        f"gpupool status: error: cannot reach the Kubernetes API server at {url}: TLS: the server's "
        "certificate is not signed by the kubeconfig's certificate-authority (a kubeconfig for another "
        "cluster, or a rotated CA?)"
    )
    assert "MaxRetryError" not in line


def test_an_api_server_without_tls_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = http.server.HTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        line = _one_line(
            _run(
                "status", "--kubeconfig", str(_kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{port}", None))
            ),
            2,
        )
    finally:
        server.shutdown()
    assert line.startswith(
        f"gpupool status: error: cannot reach the Kubernetes API server at https://127.0.0.1:{port}: TLS"
    )
    assert "MaxRetryError" not in line


def test_a_duplicate_says_why_nothing_was_done() -> None:
    import contextlib
    import io

    from gpupool.cli.commands.invoke import print_outcome

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_outcome(
            "bind",
            {"status": "duplicate", "cause": {"kind": "node-joined", "event_id": "relay-0004-node-joined"}},
            {"plan": {"actions": [], "reasons": []}, "applied": [], "errors": []},
            dry_run=False,
        )
    text = printed.getvalue()
    assert "bind ← node-joined: duplicate" in text
    assert "this delivery (relay-0004-node-joined) was already handled" in text and "new `id`" in text
