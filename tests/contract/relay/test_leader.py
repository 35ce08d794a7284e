"""Two relays share a Lease in the embedded API server: one forwards; when it dies the other takes over.

The failover test uses client-go's default timings (15 s lease, 10 s renew, 2 s retry) and checks
the issue's figure: the survivor forwards within 20 s of the holder's death. A released Lease
(graceful shutdown) is taken at the next retry. Driven by hand on one manual clock (no sleeps, so
deterministic): a leader whose Lease call hangs steps down at its renew deadline while the call is
still hanging, before the other relay may take over, and its late write is refused; of two
candidates that read the same Lease only the first writer wins (the write is conditional on the
resourceVersion); every Lease call carries a client timeout under half the renew deadline, and one
to a server that never answers gives up.
"""

from __future__ import annotations

import datetime as dt
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
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


class ManualClock:
    """Monotonic seconds the test moves by hand (both relays read it: one timeline)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _stepped(api: EmbeddedKubeAPI, identity: str, clock: ManualClock, log: list[tuple[str, str]]) -> Any:
    """An elector driven by hand (no threads): `round()` and `check_deadline()` at the clock's time."""
    api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
    return LeaderElector(
        api_client,
        namespace="default",
        name="gpupool-relay",
        identity=identity,
        on_started=lambda: log.append((identity, "started")),
        on_stopped=lambda: log.append((identity, "stopped")),
        timings=LeaseTimings(),  # client-go's: 15 s lease, 10 s renew deadline, 2 s retry
        clock=clock,
    )


def _never_two_leaders(log: list[tuple[str, str]]) -> None:
    leading: set[str] = set()
    for identity, change in log:
        (leading.add if change == "started" else leading.discard)(identity)
        assert len(leading) <= 1, f"two leaders at once: {sorted(leading)} after {log}"


def test_a_leader_whose_lease_call_hangs_steps_down_before_another_can_take_over() -> None:
    clock, log = ManualClock(), []
    with EmbeddedKubeAPI() as api:
        a, b = _stepped(api, "relay-a", clock, log), _stepped(api, "relay-b", clock, log)
        assert a.round() and not b.round()  # t=0: a takes the Lease, b sees it held
        entered, release = threading.Event(), threading.Event()
        read = a.coordination.read_namespaced_lease

        def hanging_read(*args: Any, **kwargs: Any) -> Any:
            answer = read(*args, **kwargs)  # the server answered; the answer is held on the wire
            entered.set()
            release.wait(30)
            return answer

        a.coordination.read_namespaced_lease = hanging_read
        clock.now = 2.0
        stuck = threading.Thread(target=a.round, daemon=True)
        stuck.start()
        assert entered.wait(10)
        assert not b.round()
        clock.now = 9.9
        assert not a.check_deadline() and a.leading.is_set()
        clock.now = 10.0  # the renew deadline, counted from a's last renewal round (t=0)
        assert a.check_deadline() and not a.leading.is_set() and stuck.is_alive()
        clock.now = 14.9
        assert not b.round()  # b saw the record last change at t=0: not expired yet
        clock.now = 15.0
        assert b.round() and _holder_of(api) == "relay-b"
        release.set()  # a's stale read returns: its write carries the old resourceVersion
        stuck.join(10)
        assert not stuck.is_alive() and not a.leading.is_set()
        assert not a.round() and _holder_of(api) == "relay-b"  # b's record is fresh to a
        assert log == [("relay-a", "started"), ("relay-a", "stopped"), ("relay-b", "started")]
        _never_two_leaders(log)


def test_the_running_elector_steps_down_at_its_deadline_while_its_lease_thread_hangs() -> None:
    fast = LeaseTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=0.2)
    stopped, release = threading.Event(), threading.Event()
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        elector = LeaderElector(
            api_client,
            namespace="default",
            name="gpupool-relay",
            identity="relay-a",
            on_started=lambda: None,
            on_stopped=stopped.set,
            timings=fast,
        )
        elector.start()
        try:
            wait_for(elector.leading.is_set, "relay-a to lead")
            entered = threading.Event()

            def hanging_read(*args: Any, **kwargs: Any) -> Any:
                entered.set()
                release.wait(30)
                raise ConnectionError("the read never came back")

            elector.coordination.read_namespaced_lease = hanging_read
            assert entered.wait(5)
            wait_for(stopped.is_set, "the watchdog to step down", timeout=10)
            assert not elector.leading.is_set()
        finally:
            release.set()
            elector.abandon()


def test_of_two_candidates_that_read_the_same_lease_only_one_takes_it() -> None:
    """Deterministic takeover race: b reads and writes between a's read and a's write. a's write names
    the resourceVersion it read, so it is refused (409); a write without it would also win."""
    clock, log = ManualClock(), []
    with EmbeddedKubeAPI() as api:
        client.CoordinationV1Api(
            config.new_client_from_config(config_file=str(api.kubeconfig_path))
        ).create_namespaced_lease(
            "default",
            {
                "metadata": {"name": "gpupool-relay"},
                "spec": {"holderIdentity": "crashed", "leaseDurationSeconds": 15, "renewTime": _stamp()},
            },
        )
        a, b = _stepped(api, "relay-a", clock, log), _stepped(api, "relay-b", clock, log)
        assert not a.round() and not b.round()  # t=0: both see "crashed" hold it
        clock.now = 15.0  # its record has not changed for a whole lease duration
        replace = a.coordination.replace_namespaced_lease

        def b_first(*args: Any, **kwargs: Any) -> Any:
            assert b.round()  # b reads the same version a read, and writes first
            return replace(*args, **kwargs)

        a.coordination.replace_namespaced_lease = b_first
        assert not a.round()
        assert b.leading.is_set() and not a.leading.is_set() and _holder_of(api) == "relay-b"
        assert log == [("relay-b", "started")]
        _never_two_leaders(log)


def test_every_lease_call_times_out_below_the_renew_deadline() -> None:
    timings = LeaseTimings()
    seen: list[float] = []
    with EmbeddedKubeAPI() as api:
        elector = _stepped(api, "relay-a", ManualClock(), [])
        for name in ("read_namespaced_lease", "create_namespaced_lease", "replace_namespaced_lease"):
            real = getattr(elector.coordination, name)

            def recorded(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                seen.append(kwargs["_request_timeout"])
                return _real(*args, **kwargs)

            setattr(elector.coordination, name, recorded)
        elector.round()  # read (404) + create
        elector.round()  # read + replace
        elector.stop(release=True)  # read + replace
    assert len(seen) == 6 and all(t > 0 and 2 * t < timings.renew_deadline for t in seen)


def test_a_lease_call_to_a_server_that_never_answers_gives_up_at_its_timeout() -> None:
    with socket.socket() as silent:  # accepts connections, never answers a byte
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        configuration = client.Configuration()
        configuration.host = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with client.ApiClient(configuration) as api_client:
            elector = LeaderElector(
                api_client,
                namespace="default",
                name="gpupool-relay",
                identity="relay-a",
                on_started=lambda: None,
                on_stopped=lambda: None,
                timings=LeaseTimings(lease_duration=3, renew_deadline=2, retry_period=0.5, call_timeout=0.2),
            )
            attempt = threading.Thread(target=elector.round, daemon=True)
            attempt.start()
            attempt.join(20)  # without a client timeout the read would wait for ever
            assert not attempt.is_alive() and not elector.leading.is_set()


def test_lease_call_timeouts_that_do_not_fit_the_renew_deadline_are_refused() -> None:
    with pytest.raises(ValueError, match="under half the renew deadline"):
        LeaseTimings(renew_deadline=10, call_timeout=5)


def _holder_of(api: EmbeddedKubeAPI) -> str:
    api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
    lease = client.CoordinationV1Api(api_client).read_namespaced_lease("gpupool-relay", "default")
    return str(lease.spec.holder_identity or "")


def _stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _slow_writes(elector: Any, clock: ManualClock, returns_at: list[float]) -> None:
    """Each Lease write reaches the server at once but returns at the next time in `returns_at`."""
    for method in ("create_namespaced_lease", "replace_namespaced_lease"):
        real = getattr(elector.coordination, method)

        def slow(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            answer = _real(*args, **kwargs)
            if returns_at:
                clock.now = returns_at.pop(0)
            return answer

        setattr(elector.coordination, method, slow)


def test_a_renewal_counts_from_when_its_round_began_not_when_its_write_returned() -> None:
    """Issue 33, a surviving mutation: the server may have written the renewal any time after the
    round began, so the renew deadline runs from then — counted from the return, a slow write
    would keep the leader forwarding past the moment another replica may take over."""
    clock, log = ManualClock(), []
    with EmbeddedKubeAPI() as api:
        a = _stepped(api, "relay-a", clock, log)
        assert a.round()  # t=0
        clock.now = 2.0
        _slow_writes(a, clock, [9.0])  # the renewal begun at t=2 returns at t=9
        assert a.round() and a.leading.is_set()
        clock.now = 11.9
        assert not a.check_deadline()
        clock.now = 12.0  # 10 s after the renewal's round began
        assert a.check_deadline() and not a.leading.is_set()


def test_a_write_that_returns_after_the_deadline_does_not_make_a_leader() -> None:
    """Issue 33, a surviving mutation: a round whose write returns 10 s or more after it began
    proves nothing about the Lease now; the replica does not start leading on it."""
    clock, log = ManualClock(), []
    with EmbeddedKubeAPI() as api:
        a = _stepped(api, "relay-a", clock, log)
        _slow_writes(a, clock, [10.0])  # the take begun at t=0 returns at the renew deadline
        assert not a.round() and not a.leading.is_set()
        assert log == []
