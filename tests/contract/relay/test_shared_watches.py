"""One list+watch per resource in a relay process, whoever reads it, across leadership changes.

The relay is wired as `serve` wires it (hub + forwarder on one set of shared streams, the
forwarder started and stopped by a real Lease election) against the embedded API server, which
counts the list and watch requests it receives per resource. With the hub and the forwarder both
running, each of the ten resources is listed once and watched once. The Lease is then taken by
another holder (the forwarder stops; the hub's streams go on, and it still sees a node created
meanwhile) and released again (the forwarder starts, is replayed the current state — the node
made meanwhile and the one it already sent arrive at bind — and nothing is listed or watched
again).
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from gpupool.sandbox.kubeapi.handler import KubeRequestHandler
from gpupool.sandbox.kubeapi.routes import ResourcePath, parse
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.informers import WATCHABLE
from gpupool_incluster.relay.kube import KubeWriter, subscribe_hub
from gpupool_incluster.relay.lease import LeaderElector, LeaseTimings
from gpupool_incluster.relay.watching import WatchTimings

sys.path.insert(0, str(Path(__file__).parent))
from forward_builders import Rig, provisioned_node, rig, wait_for

LEASE = ("coordination.k8s.io", "v1", "leases")
FAST_LEASE = LeaseTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=0.2)
LONG_WATCH = WatchTimings(watch_seconds=300, first_backoff=0.05, max_backoff=0.5)  # no timeout mid-test


class Requests:
    """List and watch requests the embedded API server received, by (group, plural)."""

    def __init__(self) -> None:
        self.lists: Counter[tuple[str, str]] = Counter()
        self.watches: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def record(self, method: str, path: str) -> None:
        url = urlsplit(path)
        target = parse(url.path.rstrip("/"))
        if method != "GET" or not isinstance(target, ResourcePath) or target.name:
            return
        watching = parse_qs(url.query).get("watch", [""])[0] in ("true", "True", "1")
        with self._lock:
            (self.watches if watching else self.lists)[(target.group, target.plural)] += 1

    def snapshot(self) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
        with self._lock:
            return dict(self.lists), dict(self.watches)


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> Requests:
    seen = Requests()
    answer = KubeRequestHandler._answer

    def recording(handler: KubeRequestHandler, method: str, path: str, *args: Any) -> Any:
        seen.record(method, handler.path)
        return answer(handler, method, path, *args)

    monkeypatch.setattr(KubeRequestHandler, "_answer", recording)
    return seen


def _set_holder(r: Rig, holder: str) -> None:
    cluster = r.api.cluster
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body = {"spec": {"holderIdentity": holder, "renewTime": stamp}}
    merge = "application/merge-patch+json"
    cluster.patch(cluster.resolve(*LEASE), "default", "gpupool-relay", body, merge, subresource=None)


@pytest.fixture
def relay(requests: Requests) -> Iterator[tuple[Rig, SchedulerHub, Any, LeaderElector]]:
    with rig() as r:
        r.create("nodes", provisioned_node("before", "claim-0", ready=True))
        informers = r.new_process(LONG_WATCH)
        hub = SchedulerHub(KubeWriter(r.client))
        subscribe_hub(hub, informers, informers.stopping)
        forwarder = r.forwarder(informers, idle=0.2, max_window=1.0)
        elector = LeaderElector(
            r.client,
            namespace="default",
            name="gpupool-relay",
            identity="relay-a",
            on_started=forwarder.start,
            on_stopped=forwarder.stop,
            timings=FAST_LEASE,
        )
        elector.start()
        try:
            yield r, hub, forwarder, elector
        finally:
            elector.abandon()
            forwarder.stop()


def _bind_events(r: Rig, node: str) -> list[str]:
    return [e["type"].rsplit(".", 1)[-1] for e in r.receiver.events("/bind") if e["data"]["node"] == node]


def test_the_hub_and_the_forwarder_share_one_list_and_watch_per_resource_across_leadership(
    relay: tuple[Rig, SchedulerHub, Any, LeaderElector], requests: Requests
) -> None:
    r, hub, forwarder, elector = relay
    everything = set(WATCHABLE.values())
    assert len(everything) == 10
    wait_for(elector.leading.is_set, "the relay to lead")
    wait_for(hub.synced.is_set, "the hub's kinds to list")
    wait_for(forwarder.synced, "the forwarder's kinds to list")
    wait_for(lambda: _bind_events(r, "before") == ["joined", "ready"], "the first node at bind")
    wait_for(lambda: set(requests.snapshot()[1]) == everything, "a watch on every resource")
    lists, watches = requests.snapshot()
    assert lists == dict.fromkeys(everything, 1), "one list per resource for the hub and the forwarder"
    assert watches == dict.fromkeys(everything, 1), "one watch per resource for the hub and the forwarder"

    # Another replica takes the Lease: this one steps down and stops forwarding.
    usurping = threading.Event()

    def usurp() -> None:
        while not usurping.wait(0.3):
            _set_holder(r, "relay-b")

    _set_holder(r, "relay-b")
    usurper = threading.Thread(target=usurp, daemon=True)
    usurper.start()
    try:
        wait_for(lambda: not elector.leading.is_set(), "the relay to step down", timeout=10)
        assert not forwarder.running
        r.create("nodes", provisioned_node("meanwhile", "claim-1"))
        wait_for(lambda: "meanwhile" in hub.allocator.state.node_labels, "the hub to see the new node")
        assert _bind_events(r, "meanwhile") == [], "nothing forwarded without the Lease"
    finally:
        usurping.set()
        usurper.join(5)

    # The Lease is released: this replica leads again and is replayed the current state.
    _set_holder(r, "")
    wait_for(elector.leading.is_set, "the relay to lead again", timeout=10)
    wait_for(forwarder.synced, "the forwarder to subscribe again")
    wait_for(lambda: _bind_events(r, "meanwhile") == ["joined"], "the node made meanwhile at bind")
    wait_for(lambda: _bind_events(r, "before") == ["joined", "ready"] * 2, "the first node replayed")
    assert r.receiver.refused == []
    assert requests.snapshot() == (lists, watches), "leadership changes open no list and no watch"
