"""Two relays electing one leader on a real `coordination.k8s.io/v1` Lease (issue 31, story 4).

Two `gpupool relay serve` processes, each forwarding to one local receiver under its own
`--cluster` (so each delivery's CloudEvents `source` names the relay that sent it), share the Lease
`gpupool-relay` in the test's namespace on the real API server; both run as the chart's
ServiceAccount (`chart_relay_identity`), so the chart's Lease Role and ClusterRole are all they
have. Covers: exactly one leads (`gpupool_relay_leader`, the Lease's holder), and keeps leading,
and only its forwarder delivers (the provisioned node as `node.joined`); the leader killed with
SIGKILL (no release), the other takes the Lease within the documented bound (docs/relay.md: the
15 s lease, within 20 s) and its forwarder delivers the current state.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real.relay_process import RelayProcess, call, chart_relay_identity, wait_for

LEADER = "gpupool_relay_leader"
LEASE_SECONDS = 15  # client-go's default, the relay's (relay/lease.py)
TAKEOVER_BOUND = 20  # docs/relay.md: a dead holder is replaced within 20 s


class Receiver:
    """A function URL on loopback that accepts every delivery and keeps its CloudEvent."""

    def __init__(self) -> None:
        events: list[dict[str, Any]] = []
        self.events = events

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                events.append(json.loads(body))
                self.send_response(202)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def joined_from(self, source: str, node: str) -> bool:
        return any(
            e.get("source") == source and e.get("type", "").endswith("node.joined") and node in json.dumps(e)
            for e in list(self.events)
        )


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    name = f"lease-{uuid.uuid4().hex[:6]}"
    control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        yield name
    finally:
        call(control_plane, "DELETE", f"/api/v1/namespaces/{name}")


def _relay(kubeconfig: Path, root: Path, name: str, namespace: str, receiver: Receiver) -> RelayProcess:
    return RelayProcess(
        root,
        kubeconfig,
        name=name,
        args=[
            "--forward",
            f"bind={receiver.url}",
            "--forward-auth",
            "none",
            "--lease-namespace",
            namespace,
            "--cluster",
            name,
        ],
    )


def test_the_survivor_takes_the_lease_when_the_leader_is_killed(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    plane = control_plane
    receiver = Receiver()
    node = f"provisioned-{uuid.uuid4().hex[:6]}"
    plane.request(
        "POST",
        "/api/v1/nodes",
        {"metadata": {"name": node, "labels": {"tensor-fusion.ai/node-provisioner": f"claim-{node}"}}},
    )
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/gpupool-relay"
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(call, plane, "DELETE", f"/api/v1/nodes/{node}")
        cleanup.callback(receiver.server.shutdown)
        kubeconfig = cleanup.enter_context(chart_relay_identity(plane, tmp_path, namespace=namespace)).relay
        relays = {
            name: _relay(kubeconfig, tmp_path, name, namespace, receiver) for name in ("relay-a", "relay-b")
        }
        for process in relays.values():
            cleanup.callback(process.stop)
        for process in relays.values():
            process.start()

        def leaders() -> list[str]:
            return [name for name, process in relays.items() if process.metric(LEADER) == 1]

        (leader,) = wait_for("one leader", lambda: leaders() if len(leaders()) == 1 else None, timeout=30)
        (survivor,) = (name for name in relays if name != leader)
        lease = plane.request("GET", lease_path)
        first_holder = lease["spec"]["holderIdentity"]
        wait_for(
            f"{leader} to deliver node.joined",
            lambda: receiver.joined_from(f"/gpupool/relay/{leader}", node),
            timeout=30,
        )
        assert not receiver.joined_from(f"/gpupool/relay/{survivor}", node)  # only the leader forwards
        for _ in range(8):  # two renewals: the follower stays a follower while the leader lives
            assert leaders() == [leader]
            time.sleep(0.5)

        relays[leader].kill()
        killed = time.monotonic()
        wait_for(
            f"{survivor} to take the Lease",
            lambda: relays[survivor].metric(LEADER) == 1,
            timeout=TAKEOVER_BOUND + 10,
            every=0.25,
        )
        elapsed = time.monotonic() - killed
        assert elapsed <= TAKEOVER_BOUND, f"the survivor led {elapsed:.1f} s after the kill"
        lease = plane.request("GET", lease_path)
        assert lease["spec"]["holderIdentity"] not in ("", first_holder)
        assert lease["spec"]["leaseDurationSeconds"] == LEASE_SECONDS
        assert lease["spec"].get("leaseTransitions", 0) >= 1
        wait_for(
            f"{survivor} to deliver the current state",
            lambda: receiver.joined_from(f"/gpupool/relay/{survivor}", node),
            timeout=30,
        )
