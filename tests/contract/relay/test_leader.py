"""Two relays share a Lease in the embedded API server: one forwards; when it dies the other takes over.

The failover test uses client-go's default timings (15 s lease, 10 s renew, 2 s retry) and checks
the issue's figure: the survivor forwards within 20 s of the holder's death. A released Lease
(graceful shutdown) is taken at the next retry.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from kubernetes import client

from gpupool_incluster.relay.forwarder import Forwarder
from gpupool_incluster.relay.lease import LeaderElector, LeaseTimings
from gpupool_incluster.relay.metrics import RelayMetrics

sys.path.insert(0, str(Path(__file__).parent))
from forward_builders import Rig, provisioned_node, rig, sample, wait_for


def _relay(r: Rig, identity: str, timings: LeaseTimings) -> tuple[Forwarder, LeaderElector, RelayMetrics]:
    r.metrics = RelayMetrics()
    forwarder = r.forwarder(r.new_process())  # each relay is a process with streams of its own
    elector = LeaderElector(
        r.client,
        namespace="default",
        name="gpupool-relay",
        identity=identity,
        on_started=forwarder.start,
        on_stopped=forwarder.stop,
        timings=timings,
    )
    return forwarder, elector, r.metrics


def _delivered_by(metrics: RelayMetrics) -> float:
    return sample(metrics, "gpupool_relay_events_delivered_total", type="node.joined", function="bind")


def _holder(r: Rig) -> str:
    lease = client.CoordinationV1Api(r.client).read_namespaced_lease("gpupool-relay", "default")
    return str(lease.spec.holder_identity or "")


@pytest.mark.slow
def test_one_relay_forwards_and_the_other_takes_over_within_twenty_seconds_of_its_death() -> None:
    with rig() as r:
        relays = {name: _relay(r, name, LeaseTimings()) for name in ("relay-a", "relay-b")}
        relays["relay-a"][1].start()
        wait_for(relays["relay-a"][1].leading.is_set, "relay-a to lead")
        relays["relay-b"][1].start()
        try:
            wait_for(relays["relay-a"][0].synced, "the leader's watches")
            r.create("nodes", provisioned_node("n-1", "claim-1"))
            wait_for(lambda: len(r.receiver.received) == 1, "n-1 at bind")
            time.sleep(2.5)  # a full retry period: the standby must not forward too
            assert len(r.receiver.received) == 1
            assert _delivered_by(relays["relay-a"][2]) == 1 and _delivered_by(relays["relay-b"][2]) == 0
            assert not relays["relay-b"][1].leading.is_set() and _holder(r) == "relay-a"
            died = time.monotonic()
            relays["relay-a"][1].abandon()  # no release: the survivor must wait for expiry
            relays["relay-a"][0].stop()
            r.create("nodes", provisioned_node("n-2", "claim-2"))
            wait_for(
                lambda: any(e["data"]["node"] == "n-2" for e in r.receiver.events()),
                "n-2 via relay-b",
                timeout=25,
            )
            assert time.monotonic() - died < 20
            assert _holder(r) == "relay-b" and _delivered_by(relays["relay-b"][2]) >= 1
        finally:
            for forwarder, elector, _ in relays.values():
                elector.abandon()
                forwarder.stop()


def test_a_released_lease_is_taken_at_the_next_retry_and_only_one_holds_it() -> None:
    fast = LeaseTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=0.2)
    with rig() as r:
        a, b = _relay(r, "relay-a", fast), _relay(r, "relay-b", fast)
        a[1].start()
        wait_for(a[1].leading.is_set, "relay-a to lead")
        b[1].start()
        try:
            time.sleep(1.0)
            assert a[0].running and not b[0].running and not b[1].leading.is_set()
            a[1].stop()  # graceful: releases
            assert not a[0].running
            took = wait_for(b[1].leading.is_set, "relay-b to take the released lease", timeout=3)
            assert took < fast.lease_duration and b[0].running and _holder(r) == "relay-b"
        finally:
            a[1].abandon()
            b[1].abandon()
            a[0].stop()
            b[0].stop()


def test_lease_timings_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        LeaseTimings(lease_duration=10, renew_deadline=15, retry_period=2)
