"""`gpupool relay serve` as a process with every listener and the forwarder, against the sandbox.

Through the Service port (`--listen`) the extender is unreachable, `/api/*` answers 401 without a
token or with one made for the API server rather than the relay's audience, and 403 for a token
whose user may not call it (TokenReview and SubjectAccessReview are served by the sandbox from its
token table and RBAC bindings); the extender answers on loopback;
`/metrics` and `/readyz` answer on `--metrics-listen`; a provisioned Node reaches the receiver as
an HMAC-signed `node.joined`. The same test runs the relay from a fresh venv holding only
`.[incluster]` (slow: it installs the package), proving the extra carries what the relay imports.
Relays killed with SIGKILL (slow: real Lease expiry): of two, one forwards; the survivor takes over
within 20 s; a relay started after both died re-lists and delivers what changed meanwhile.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import venv
from pathlib import Path

import httpx
import pytest

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.reviews import book_of
from gpupool.testing.relay_receiver import RelayReceiver
from gpupool_incluster.relay.access import VIEWER_RULES

sys.path.insert(0, str(Path(__file__).parent))
from forward_builders import SECRET, provisioned_node, wait_for

ROOT = Path(__file__).resolve().parents[3]
VIEWER_ROLE = [{"nonResourceURLs": [path], "verbs": [verb]} for path, verb in VIEWER_RULES]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"relay exited with {process.returncode}")
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _exercise(python: str, tmp_path: Path) -> None:
    with EmbeddedKubeAPI() as api, RelayReceiver(auth="hmac", hmac_secret=SECRET) as receiver:
        book = book_of(api.cluster)
        book.add_token("alice-token", "alice", ["gpupool-viewers"], audiences=["gpupool-relay"])
        book.add_token("alice-kube-token", "alice", ["gpupool-viewers"])  # made for the API server
        book.add_token("bob-token", "bob", audiences=["gpupool-relay"])
        book.bind([{"kind": "Group", "name": "gpupool-viewers"}], VIEWER_ROLE)
        secret = tmp_path / "hmac"
        secret.write_bytes(SECRET + b"\n")
        main, extender, metrics = _free_port(), _free_port(), _free_port()
        command = [
            python, "-m", "gpupool.cli.main", "relay", "serve", "--kubeconfig", str(api.kubeconfig_path),
            "--listen", f"127.0.0.1:{main}", "--insecure-http", "--extender-listen", f"127.0.0.1:{extender}",
            "--metrics-listen", f"127.0.0.1:{metrics}", "--api-access", "token",
            "--forward", f"bind={receiver.url('/bind')}", "--forward-auth", "hmac",
            "--hmac-secret-file", str(secret), "--lease-namespace", "default", "--cluster", "test-cluster",
        ]  # fmt: skip
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
        )
        try:
            wait_for(
                lambda: _ready(f"http://127.0.0.1:{metrics}/readyz", process), "the relay to be ready", 60
            )
            service, loopback = f"http://127.0.0.1:{main}", f"http://127.0.0.1:{extender}"
            filter_args = {"Pod": {"metadata": {"name": "p"}}, "NodeNames": []}
            assert httpx.post(f"{service}/scheduler/filter", json=filter_args).status_code == 404
            assert httpx.post(f"{service}/scheduler/bind", json={}).status_code == 404
            assert httpx.post(f"{loopback}/scheduler/filter", json=filter_args).status_code == 200
            assert httpx.get(f"{service}/api/allocation").status_code == 401
            bearer = {"authorization": "Bearer unknown-token"}
            assert httpx.get(f"{service}/api/allocation", headers=bearer).status_code == 401
            bob = {"authorization": "Bearer bob-token"}
            assert httpx.get(f"{service}/api/allocation", headers=bob).status_code == 403
            alice = {"authorization": "Bearer alice-token"}
            assert httpx.get(f"{service}/api/allocation", headers=alice).status_code == 200
            # alice's own credential for the API server is not handed to the relay: refused
            kube_token = {"authorization": "Bearer alice-kube-token"}
            refused = httpx.get(f"{service}/api/allocation", headers=kube_token)
            assert refused.status_code == 401 and "audience gpupool-relay" in refused.json()["error"]
            assert (
                httpx.post(f"{service}/api/simulate-schedule", headers=bob, content="kind: Pod").status_code
                == 403
            )
            assert httpx.get(f"{service}/metrics").status_code == 404  # moved to --metrics-listen
            assert httpx.get(f"{service}/healthz").json()["status"] == "ok"
            core_url = f"{api.url}/api/v1/nodes"
            httpx.post(
                core_url, json={"apiVersion": "v1", "kind": "Node", **provisioned_node("n-1", "claim-1")}
            )
            wait_for(lambda: receiver.events("/bind"), "node.joined at the receiver", 20)
            (event,) = receiver.events("/bind")
            assert event["type"] == "ai.tensor-fusion.gpupool.node.joined"
            assert event["source"] == "/gpupool/relay/test-cluster" and not receiver.refused
            page = httpx.get(f"http://127.0.0.1:{metrics}/metrics").text
            assert 'gpupool_relay_events_delivered_total{function="bind",type="node.joined"} 1.0' in page
            assert (
                "gpupool_relay_request_latency_seconds_count" in page and "gpupool_relay_leader 1.0" in page
            )
        finally:
            process.terminate()
            process.wait(15)


def test_relay_serve_separates_listeners_guards_the_api_and_forwards(tmp_path: Path) -> None:
    _exercise(sys.executable, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # pip installs the extra's dependencies from the index
def test_a_fresh_venv_with_only_the_incluster_extra_runs_the_relay(tmp_path: Path) -> None:
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = str(target / "bin" / "python")
    source = tmp_path / "src"
    shutil.copytree(
        ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "__pycache__", ".*cache")
    )
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", f"{source}[incluster]"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    _exercise(python, tmp_path)


def _start_relay(
    api: EmbeddedKubeAPI, receiver: RelayReceiver, secret: Path
) -> tuple[subprocess.Popen[bytes], str]:
    main, extender, metrics = _free_port(), _free_port(), _free_port()
    command = [
        sys.executable, "-m", "gpupool.cli.main", "relay", "serve", "--kubeconfig", str(api.kubeconfig_path),
        "--listen", f"127.0.0.1:{main}", "--insecure-http", "--extender-listen", f"127.0.0.1:{extender}",
        "--metrics-listen", f"127.0.0.1:{metrics}", "--forward", f"bind={receiver.url('/bind')}",
        "--forward-auth", "hmac", "--hmac-secret-file", str(secret), "--lease-namespace", "default",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
    )
    url = f"http://127.0.0.1:{metrics}"
    wait_for(lambda: _ready(f"{url}/readyz", process), "a relay to be ready", 60)
    return process, url


def _leads(url: str) -> bool:
    try:
        return "gpupool_relay_leader 1.0" in httpx.get(f"{url}/metrics", timeout=2).text
    except httpx.HTTPError:
        return False


def _nodes_delivered(receiver: RelayReceiver) -> list[str]:
    return [e["data"]["node"] for e in receiver.events("/bind") if e["type"].endswith("node.joined")]


@pytest.mark.slow
def test_killed_relays_fail_over_and_a_restarted_one_delivers_what_changed_meanwhile(tmp_path: Path) -> None:
    with EmbeddedKubeAPI() as api, RelayReceiver(auth="hmac", hmac_secret=SECRET) as receiver:
        secret = tmp_path / "hmac"
        secret.write_bytes(SECRET)
        nodes = api.cluster.resolve("", "v1", "nodes")
        relays = [_start_relay(api, receiver, secret) for _ in range(2)]
        try:
            wait_for(lambda: any(_leads(url) for _, url in relays), "one relay to lead", 30)
            api.cluster.create(nodes, None, provisioned_node("n-1", "claim-1"))
            wait_for(lambda: "n-1" in _nodes_delivered(receiver), "n-1 at bind", 20)
            time.sleep(3)  # more than a retry period: the standby must not deliver it too
            assert _nodes_delivered(receiver) == ["n-1"]
            assert [_leads(url) for _, url in relays].count(True) == 1
            leader = next(r for r in relays if _leads(r[1]))
            survivor = next(r for r in relays if r is not leader)
            leader[0].kill()  # no goodbye: the Lease must expire
            died = time.monotonic()
            api.cluster.create(nodes, None, provisioned_node("n-2", "claim-2"))
            wait_for(lambda: "n-2" in _nodes_delivered(receiver), "n-2 via the survivor", 25)
            assert time.monotonic() - died < 20 and _leads(survivor[1])
            survivor[0].kill()
            api.cluster.create(nodes, None, provisioned_node("n-3", "claim-3"))
            time.sleep(1)
            assert "n-3" not in _nodes_delivered(receiver)
            relays.append(_start_relay(api, receiver, secret))
            wait_for(lambda: "n-3" in _nodes_delivered(receiver), "n-3 from the restarted relay", 30)
            again = _nodes_delivered(receiver)
            assert {"n-1", "n-2"} <= set(again[again.index("n-2") + 1 :])  # re-listed: harmless duplicates
            assert not receiver.refused
        finally:
            for process, _ in relays:
                process.kill()
                process.wait(15)
