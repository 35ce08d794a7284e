"""enabled-replicas under a burst: admissions count before the watch sees the pods, and expire."""

from __future__ import annotations

import sys
from pathlib import Path

from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.replicas import ReplicaLedger

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, pool_model, tf_pod

T = "tensor-fusion.ai/"
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}


def replica(name: str = "") -> dict[str, object]:
    pod = tf_pod(name or "x")
    metadata = pod["metadata"]
    metadata["ownerReferences"] = [OWNER]
    metadata["annotations"] = {T + "tflops-limit": "10", T + "vram-limit": "1Gi", T + "enabled-replicas": "2"}
    if not name:
        metadata.pop("name")
        metadata["generateName"] = "rs-"
    return pod


def test_a_burst_of_replicas_moves_only_enabled_replicas() -> None:
    hub = SchedulerHub(FakeWriter())
    hub.apply_pool(pool_model())
    results = [hub.admit(replica(), "team") for _ in range(4)]
    assert [r.migrated for r in results] == [True, True, False, False]
    assert all(r.patch == [] for r in results[2:])


def test_dry_runs_and_simulations_do_not_count() -> None:
    hub = SchedulerHub(FakeWriter())
    hub.apply_pool(pool_model())
    hub.admit(replica(), "team", record=False)
    hub.simulate(replica(), "team")
    assert hub.replicas.migrated("rs-1") == 0


def test_seen_pods_replace_pending_admissions_and_stale_admissions_expire() -> None:
    now = [100.0]
    ledger = ReplicaLedger(clock=lambda: now[0], pending_ttl=30)
    ledger.admitted("rs-1")
    ledger.admitted("rs-1")
    assert ledger.migrated("rs-1") == 2
    from gpupool.core.model.foreign import Pod

    seen = tf_pod("m0")
    seen["metadata"]["ownerReferences"] = [OWNER]
    ledger.observe(Pod.model_validate(seen), "team/m0", finished=False)
    assert ledger.migrated("rs-1") == 2
    ledger.observe(Pod.model_validate(seen), "team/m0", finished=False)
    assert ledger.migrated("rs-1") == 2
    now[0] += 31
    assert ledger.migrated("rs-1") == 1
    ledger.observe(Pod.model_validate(seen), "team/m0", finished=True)
    assert ledger.migrated("rs-1") == 0
    routed_native = tf_pod("n0")
    routed_native["metadata"]["ownerReferences"] = [OWNER]
    routed_native["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    ledger.observe(Pod.model_validate(routed_native), "team/n0", finished=False)
    assert ledger.migrated("rs-1") == 0
