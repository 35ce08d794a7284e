"""enabled-replicas counts the pods the watch shows, never reviews: a burst still moves only the limit
(an admission waits for the watch to show the replica before it), a forged review takes no real
replica's slot, and unsettled admissions lapse."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from starlette.testclient import TestClient

from gpupool.core.model.foreign import Pod
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import HubSettings, SchedulerHub
from gpupool_incluster.relay.replicas import ReplicaLedger
from gpupool_incluster.relay.views import apply_annotation_patch

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, pool_model, tf_pod

T = "tensor-fusion.ai/"
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}


def replica(name: str = "", *, limit: str = "2") -> dict[str, Any]:
    pod = tf_pod(name or "x")
    metadata = pod["metadata"]
    metadata["ownerReferences"] = [OWNER]
    metadata["annotations"] = {
        T + "tflops-limit": "10",
        T + "vram-limit": "1Gi",
        T + "enabled-replicas": limit,
    }
    pod["spec"].pop("schedulerName")
    if not name:
        metadata.pop("name")
        metadata["generateName"] = "rs-"
    return pod


def review(pod: dict[str, Any], uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "operation": "CREATE", "namespace": "team", "object": pod},
    }


def created(pod: dict[str, Any], answer: dict[str, Any], name: str) -> Pod:
    """The pod the API server stores after the webhook's patch (what the watch then shows)."""
    patch = json.loads(base64.b64decode(answer["response"].get("patch") or "W10="))
    stored = apply_annotation_patch(pod, patch, namespace="team")
    stored["metadata"] = {**stored["metadata"], "name": name}
    for op in patch:
        if op["path"] == "/spec/schedulerName":
            stored["spec"] = {**stored["spec"], "schedulerName": op["value"]}
    return Pod.model_validate(stored)


def moved(answer: dict[str, Any]) -> bool:
    patch = json.loads(base64.b64decode(answer["response"].get("patch") or "W10="))
    return any(op["path"] == "/spec/schedulerName" for op in patch)


async def _burst(hub: SchedulerHub, count: int) -> list[bool]:
    """`count` replicas reviewed at once; each allowed one is created and shown by the watch."""
    transport = httpx.ASGITransport(app=create_app(hub, surfaces={"webhook"}))
    async with httpx.AsyncClient(transport=transport, base_url="http://relay") as http:

        async def one(i: int) -> bool:
            pod = replica()
            answer = (await http.post("/mutate-pod", json=review(pod, f"u{i}"))).json()
            hub.apply_pod(created(pod, answer, f"rs-{i}"))  # the API server stores it; the watch shows it
            return moved(answer)

        return list(await asyncio.gather(*(one(i) for i in range(count))))


def test_a_burst_of_replicas_moves_only_enabled_replicas() -> None:
    hub = SchedulerHub(FakeWriter())
    hub.apply_pool(pool_model())
    results = asyncio.run(_burst(hub, 4))
    assert sorted(results) == [False, False, True, True]
    assert hub.replicas.migrated("rs-1") == 2 and hub.replicas.unsettled("rs-1") == 0


def test_a_forged_review_does_not_take_a_real_replicas_slot() -> None:
    hub = SchedulerHub(FakeWriter(), HubSettings(replica_settle=0.2))
    hub.apply_pool(pool_model())
    with TestClient(create_app(hub, surfaces={"webhook"})) as client:
        # Anyone reaching the webhook can send a review naming a real owner; no pod ever follows it.
        forged = client.post("/mutate-pod", json=review(replica(limit="1"), "forged")).json()
        assert moved(forged)
        assert hub.replicas.migrated("rs-1") == 0 and hub.replicas.unsettled("rs-1") == 1
        # The real replica waits for the watch (at most replica_settle), then counts what it shows: 0.
        real = client.post("/mutate-pod", json=review(replica(limit="1"), "real")).json()
        assert moved(real), real
        hub.apply_pod(created(replica(limit="1"), real, "rs-real"))
        after = client.post("/mutate-pod", json=review(replica(limit="1"), "third")).json()
        assert not moved(after)  # the watch shows one moved replica: the limit of 1 is reached


def test_dry_runs_and_simulations_do_not_count() -> None:
    hub = SchedulerHub(FakeWriter())
    hub.apply_pool(pool_model())
    hub.admit(replica(), "team", record=False)
    hub.simulate(replica(), "team")
    assert hub.replicas.migrated("rs-1") == 0 and hub.replicas.unsettled("rs-1") == 0


def test_seen_pods_replace_pending_admissions_and_stale_admissions_expire() -> None:
    now = [100.0]
    ledger = ReplicaLedger(clock=lambda: now[0], settle=2)
    ledger.admitted("rs-1")
    ledger.admitted("rs-1")
    assert ledger.migrated("rs-1") == 0 and ledger.unsettled("rs-1") == 2  # reviews never count

    seen = tf_pod("m0")
    seen["metadata"]["ownerReferences"] = [OWNER]
    ledger.observe(Pod.model_validate(seen), "team/m0", finished=False)
    assert ledger.migrated("rs-1") == 1 and ledger.unsettled("rs-1") == 1
    ledger.observe(Pod.model_validate(seen), "team/m0", finished=False)  # the same pod again
    assert ledger.migrated("rs-1") == 1 and ledger.unsettled("rs-1") == 1
    now[0] += 2.5
    assert ledger.unsettled("rs-1") == 0 and ledger.migrated("rs-1") == 1
    ledger.observe(Pod.model_validate(seen), "team/m0", finished=True)
    assert ledger.migrated("rs-1") == 0
    routed_native = tf_pod("n0")
    routed_native["metadata"]["ownerReferences"] = [OWNER]
    routed_native["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    ledger.observe(Pod.model_validate(routed_native), "team/n0", finished=False)
    assert ledger.migrated("rs-1") == 0


def test_marks_are_bounded_per_owner_and_in_all() -> None:
    from gpupool_incluster.relay import replicas

    ledger = ReplicaLedger(clock=lambda: 0.0, settle=2)
    for _ in range(replicas.MAX_MARKS_PER_OWNER + 50):
        ledger.admitted("rs-1")
    assert ledger.unsettled("rs-1") == replicas.MAX_MARKS_PER_OWNER
    for i in range(replicas.MAX_OWNERS_MARKED + 50):
        ledger.admitted(f"forged-{i}")
    assert len(ledger.marks) <= replicas.MAX_OWNERS_MARKED
