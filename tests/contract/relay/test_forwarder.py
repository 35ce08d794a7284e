"""The forwarder against the embedded API server and a receiver that verifies every HMAC signature.

Acceptance of issue 16: a provisioned Node reaches bind as `node.joined` within 2 s; a burst of
1,000 unschedulable worker pods in one pool reaches launch as at most 10 deliveries; every event
the functions get is one intake reads as the right cause; a restarted forwarder re-lists and
delivers what changed while it was down (a forwarder restarted in the same process, the
leadership case, is covered by test_shared_watches.py); an event for a function with no
`--forward` URL is counted as dropped (reason no-forward) and warned about once per function.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from gpupool.core.intake.causes import NodeChanged, Reconcile
from gpupool.core.intake.relay import intake_cloudevent

sys.path.insert(0, str(Path(__file__).parent))
from forward_builders import UNSCHEDULABLE, provisioned_node, rig, sample, wait_for, worker_pod


def test_a_provisioned_node_reaches_bind_as_node_joined_within_two_seconds() -> None:
    with rig() as r:
        forwarder = r.forwarder()
        forwarder.start()
        try:
            wait_for(forwarder.synced, "the forwarder's watches to sync")
            r.create("nodes", {"metadata": {"name": "plain-node"}})
            r.create("nodes", provisioned_node("gpu-node-1", "claim-1"))
            took = wait_for(lambda: r.receiver.events("/bind"), "node.joined at bind", timeout=2.0)
            assert took < 2.0
            (event,) = r.receiver.events("/bind")
            cause = intake_cloudevent(event)
            assert isinstance(cause, NodeChanged)
            assert (cause.node, cause.change, cause.claim) == ("gpu-node-1", "joined", "claim-1")
            assert event["id"].startswith(
                r.api.cluster.get(r.api.cluster.resolve("", "v1", "nodes"), "", "gpu-node-1")["metadata"][
                    "uid"
                ]
            )
            r.patch(
                "nodes",
                "gpu-node-1",
                {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                status=True,
            )
            wait_for(lambda: len(r.receiver.events("/bind")) == 2, "node.ready at bind")
            r.delete("nodes", "gpu-node-1")
            wait_for(lambda: len(r.receiver.events("/bind")) == 3, "node.deleted at bind")
            kinds = [e["type"].rsplit(".", 1)[-1] for e in r.receiver.events("/bind")]
            assert kinds == ["joined", "ready", "deleted"]
            assert not r.receiver.events("/launch") and not r.receiver.refused
        finally:
            forwarder.stop()


def test_a_burst_of_a_thousand_unschedulable_pods_reaches_launch_as_at_most_ten_deliveries() -> None:
    with rig() as r:
        forwarder = r.forwarder()  # the default windows: 1 s idle, 10 s max
        forwarder.start()
        try:
            wait_for(forwarder.synced, "the forwarder's watches to sync")
            for i in range(1000):
                r.create("pods", worker_pod(f"w-{i}"), namespace="default")
                r.patch("pods", f"w-{i}", UNSCHEDULABLE, namespace="default", status=True)
            r.create("pods", worker_pod("not-yet-marked"), namespace="default")
            wait_for(
                lambda: (
                    sample(
                        r.metrics,
                        "gpupool_relay_events_seen_total",
                        type="pod.unschedulable",
                        function="launch",
                    )
                    == 1000
                ),
                "every pod to be seen",
                timeout=60,
            )
            assert forwarder.wait_delivered(30)
            deliveries = r.receiver.events("/launch")
            assert 1 <= len(deliveries) <= 10
            causes = [intake_cloudevent(e) for e in deliveries]
            assert all(isinstance(x, Reconcile) and x.pool == "pool-a" for x in causes)
            coalesced = sample(
                r.metrics, "gpupool_relay_events_coalesced_total", type="pod.unschedulable", function="launch"
            )
            assert coalesced + len(deliveries) == 1000
        finally:
            forwarder.stop()


def test_a_restarted_forwarder_relists_and_delivers_what_changed_while_it_was_down() -> None:
    with rig() as r:
        first = r.forwarder(idle=0.2, max_window=1.0)
        first.start()
        wait_for(first.synced, "the first forwarder to sync")
        r.create("nodes", provisioned_node("before", "claim-0", ready=True))
        wait_for(lambda: len(r.receiver.events("/bind")) == 2, "joined and ready for the first node")
        first.stop()
        r.processes[0].stop()  # the first relay's process ends with its streams
        # While no relay runs: a node joins, a pool changes, a claim starts deleting.
        r.create("nodes", provisioned_node("meanwhile", "claim-1"))
        r.create("gpupools", {"metadata": {"name": "pool-b"}, "spec": {}}, group="tensor-fusion.ai")
        r.create(
            "gpunodeclaims",
            {
                "metadata": {"name": "claim-0", "finalizers": ["x/y"]},
                "spec": {"tflopsOffered": "100", "vramOffered": "40Gi", "gpuDeviceOffered": 1},
            },
            group="tensor-fusion.ai",
        )
        r.delete("gpunodeclaims", "claim-0", group="tensor-fusion.ai")
        delivered_before = len(r.receiver.received)
        second = r.forwarder(r.new_process(), idle=0.2, max_window=1.0)  # a restarted relay: new streams
        second.start()
        try:
            wait_for(second.synced, "the second forwarder to sync")
            assert second.wait_delivered(15)
            later = r.receiver.events()[delivered_before:]
            seen = {(e["type"].rsplit("gpupool.", 1)[-1], tuple(sorted(e["data"].values()))) for e in later}
            assert ("node.joined", ("claim-1", "meanwhile")) in seen
            assert ("pool.changed", ("pool-b",)) in seen
            assert ("claim.deleted", ("claim-0",)) in seen
            # The node seen before the restart is delivered again: a harmless duplicate.
            assert ("node.joined", ("before", "claim-0")) in seen
            ids = [e["id"] for e in r.receiver.events()]
            assert ids.count(ids[0]) == 2  # the same change keeps its id, so functions can recognise it
        finally:
            second.stop()


def test_events_with_nowhere_to_go_are_counted_and_logged_once_per_function(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with rig() as r:
        forwarder = r.forwarder(urls={"launch": r.receiver.url("/launch")})  # no --forward bind=URL
        forwarder.start()
        try:
            wait_for(forwarder.synced, "the forwarder's watches to sync")
            with caplog.at_level(logging.DEBUG, logger="gpupool.relay.forward"):
                for number in (1, 2):
                    r.create("nodes", provisioned_node(f"gpu-node-{number}", f"claim-{number}"))
                labels = {"type": "node.joined", "function": "bind", "reason": "no-forward"}
                wait_for(
                    lambda: sample(r.metrics, "gpupool_relay_events_dropped_total", **labels) == 2,
                    "both node.joined counted as dropped",
                )
            warnings = [m for m in caplog.records if m.levelno == logging.WARNING]
            assert len(warnings) == 1
            assert "no --forward bind=URL" in warnings[0].getMessage()
            assert not r.receiver.events()
        finally:
            forwarder.stop()
