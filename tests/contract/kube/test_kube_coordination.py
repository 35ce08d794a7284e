"""Leases, evictions and events through KubeCluster against the embedded API server.

Covers: a provisioning Lease is held by one holder at a time (renewal by the holder, takeover
only after expiry, release only by the holder); a warm client takes and gives back a Lease with
one replace each and, when someone else wrote the Lease since, reads it and decides on it as it is;
of 8 concurrent acquirers exactly one wins;
eviction deletes a pod, a PodDisruptionBudget that forbids it is `Throttled` (not a crash), a
missing pod `NotFound`; events carry reason, type and the full involvedObject reference (uid and
resourceVersion of an object that exists, so `kubectl describe` finds them), live in the
object's namespace or `default`, and a recreated object gets its own; invalid events are
`PermanentError`.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client as k8s

from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.service.errors import NotFound, PermanentError, Throttled
from gpupool.service.ports import ObjectEvent

from .conftest import FIXED_NOW, POOL_COMPACTION, make_pool

MINUTE = timedelta(minutes=1)


def _lease(api_client: Any, name: str) -> dict[str, Any]:
    response = k8s.CoordinationV1Api(api_client).read_namespaced_lease(
        name, "default", _preload_content=False
    )
    lease: dict[str, Any] = json.loads(response.data)
    return lease


def test_lease_is_held_by_one_holder_until_it_expires(cluster: KubeCluster, api_client: Any) -> None:
    assert cluster.try_acquire_lease("pool-a", holder="one", now=FIXED_NOW, duration=MINUTE)
    assert not cluster.try_acquire_lease(
        "pool-a", holder="two", now=FIXED_NOW + timedelta(seconds=30), duration=MINUTE
    )
    # the holder renews, which pushes the expiry out
    assert cluster.try_acquire_lease(
        "pool-a", holder="one", now=FIXED_NOW + timedelta(seconds=50), duration=MINUTE
    )
    assert not cluster.try_acquire_lease(
        "pool-a", holder="two", now=FIXED_NOW + timedelta(seconds=90), duration=MINUTE
    )
    # expired: taken over
    assert cluster.try_acquire_lease(
        "pool-a", holder="two", now=FIXED_NOW + timedelta(minutes=3), duration=MINUTE
    )
    spec = _lease(api_client, "pool-a")["spec"]
    assert spec["holderIdentity"] == "two"
    assert spec["leaseDurationSeconds"] == 60
    assert spec["leaseTransitions"] == 1


def test_release_only_by_the_holder(cluster: KubeCluster, api_client: Any) -> None:
    cluster.release_lease("never-created", holder="one")  # nothing to give back
    assert cluster.try_acquire_lease("pool-b", holder="one", now=FIXED_NOW, duration=MINUTE)
    cluster.release_lease("pool-b", holder="two")
    assert _lease(api_client, "pool-b")["spec"]["holderIdentity"] == "one"
    cluster.release_lease("pool-b", holder="one")
    assert "holderIdentity" not in _lease(api_client, "pool-b")["spec"]
    assert cluster.try_acquire_lease("pool-b", holder="two", now=FIXED_NOW, duration=MINUTE)


def test_a_warm_client_writes_once_and_reads_the_lease_only_when_someone_else_wrote_it(
    cluster: KubeCluster, api_client: Any
) -> None:
    assert cluster.try_acquire_lease("pool-w", holder="one", now=FIXED_NOW, duration=MINUTE)
    cluster.release_lease("pool-w", holder="one")
    sent: list[str] = []
    rest = api_client.rest_client
    original = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(method)
        return original(method, url, *args, **kwargs)

    rest.request = request
    later = FIXED_NOW + timedelta(seconds=10)
    assert cluster.try_acquire_lease("pool-w", holder="two", now=later, duration=MINUTE)
    cluster.release_lease("pool-w", holder="two")
    assert sent == ["PUT", "PUT"]
    other = KubeCluster(api_client)  # another function's client takes it meanwhile
    assert other.try_acquire_lease("pool-w", holder="three", now=later, duration=MINUTE)
    sent.clear()
    assert not cluster.try_acquire_lease("pool-w", holder="four", now=later, duration=MINUTE)
    assert sent == ["PUT", "GET"]  # refused (409), then read: "three" holds it
    cluster.release_lease("pool-w", holder="four")  # not ours: nothing written
    assert _lease(api_client, "pool-w")["spec"]["holderIdentity"] == "three"


def test_concurrent_acquirers_exactly_one_wins(cluster: KubeCluster) -> None:
    def acquire(index: int) -> bool:
        return cluster.try_acquire_lease("pool-c", holder=f"h{index}", now=FIXED_NOW, duration=MINUTE)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(acquire, range(8)))
    assert results.count(True) == 1


def test_concurrent_takeover_of_an_expired_lease_has_one_winner(cluster: KubeCluster) -> None:
    assert cluster.try_acquire_lease("pool-d", holder="old", now=FIXED_NOW, duration=MINUTE)
    later = FIXED_NOW + timedelta(minutes=5)

    def acquire(index: int) -> bool:
        return cluster.try_acquire_lease("pool-d", holder=f"h{index}", now=later, duration=MINUTE)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(acquire, range(8)))
    assert results.count(True) == 1


def test_naive_time_is_refused(cluster: KubeCluster) -> None:
    with pytest.raises(ValueError, match="timezone"):
        cluster.try_acquire_lease("pool-e", holder="one", now=FIXED_NOW.replace(tzinfo=None), duration=MINUTE)


def _pod(api_client: Any, name: str, labels: dict[str, str]) -> None:
    k8s.CoreV1Api(api_client).create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        },
    )


def test_eviction_deletes_the_pod(cluster: KubeCluster, api_client: Any) -> None:
    _pod(api_client, "free", {"app": "free"})
    cluster.evict_pod("default", "free")
    assert [pod.name for pod in cluster.list_pods()] == []
    with pytest.raises(NotFound):
        cluster.evict_pod("default", "free")


def test_eviction_blocked_by_a_budget_is_throttled_and_keeps_the_pod(
    cluster: KubeCluster, api_client: Any
) -> None:
    _pod(api_client, "guarded", {"app": "guarded"})
    k8s.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        },
    )
    with pytest.raises(Throttled) as caught:
        cluster.evict_pod("default", "guarded")
    assert caught.value.retryable
    assert [pod.name for pod in cluster.list_pods()] == ["guarded"]


def _events(api_client: Any) -> list[dict[str, Any]]:
    response = k8s.CoreV1Api(api_client).list_event_for_all_namespaces(_preload_content=False)
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def test_events_carry_reason_type_and_involved_object(cluster: KubeCluster, api_client: Any) -> None:
    cluster.record_event(
        ObjectEvent(
            kind="GPUPool",
            name="pool-a",
            namespace=None,
            event_type="Warning",
            reason="MaxResourceConstraintReached",
            message="x" * 5000,
        )
    )
    cluster.record_event(
        ObjectEvent(
            kind="Pod", name="w1", namespace="default", event_type="Normal", reason="Compaction", message="m"
        )
    )
    events = {event["reason"]: event for event in _events(api_client)}
    warning = events["MaxResourceConstraintReached"]
    assert warning["type"] == "Warning"
    assert warning["involvedObject"] == {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "name": "pool-a",
    }
    assert warning["metadata"]["namespace"] == "default"
    assert len(warning["message"]) == 1024
    assert warning["lastTimestamp"].startswith("2026-11-29T12:00:00")
    normal = events["Compaction"]
    assert (
        normal["involvedObject"]["namespace"] == "default" and normal["involvedObject"]["apiVersion"] == "v1"
    )


def test_the_same_event_again_is_counted_not_duplicated(cluster: KubeCluster, api_client: Any) -> None:
    def exhausted(message: str) -> None:
        cluster.record_event(
            ObjectEvent(
                kind="GPUPool",
                name="pool-a",
                namespace=None,
                event_type="Warning",
                reason="NodeLaunchFailed",
                message=message,
            )
        )

    for _ in range(3):
        exhausted("every offering is out of capacity")
    exhausted("InvalidParameterValue: bad AMI")
    events = sorted(_events(api_client), key=lambda event: event["count"])
    assert [(event["message"], event["count"]) for event in events] == [
        ("InvalidParameterValue: bad AMI", 1),
        ("every offering is out of capacity", 3),
    ]
    assert all(event["metadata"]["name"].startswith("pool-a.") for event in events)


@pytest.mark.parametrize(
    ("kind", "name", "reason", "event_type"),
    [
        ("", "p", "R", "Normal"),
        ("GPUPool", "", "R", "Normal"),
        ("GPUPool", "p", "", "Normal"),
        ("GPUPool", "p", "R", "Bad"),
    ],
)
def test_invalid_events_are_permanent_errors(
    cluster: KubeCluster, api_client: Any, kind: str, name: str, reason: str, event_type: Any
) -> None:
    with pytest.raises(PermanentError):
        cluster.record_event(
            ObjectEvent(
                kind=kind, name=name, namespace=None, event_type=event_type, reason=reason, message="m"
            )
        )
    assert _events(api_client) == []


def test_an_event_names_its_object_by_uid_and_resource_version(cluster: KubeCluster, api_client: Any) -> None:
    # kubectl describe finds an object's Events by involvedObject.uid: client-go's recorder
    # writes the full object reference, and so does the adapter.
    cluster.create_pool(make_pool())
    stored = cluster.get_pool("pool-a")
    cluster.record_event(POOL_COMPACTION)
    (event,) = _events(api_client)
    assert event["involvedObject"] == {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "name": "pool-a",
        "uid": stored.metadata.uid,
        "resourceVersion": stored.metadata.resource_version,
    }


def test_a_pod_event_lives_in_the_pods_namespace_with_its_uid(cluster: KubeCluster, api_client: Any) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "ml"}})
    pod = core.create_namespaced_pod(
        "ml", {"metadata": {"name": "w1"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    )
    cluster.record_event(
        ObjectEvent(
            kind="Pod", name="w1", namespace="ml", event_type="Warning", reason="NoOffering", message="m"
        )
    )
    (event,) = _events(api_client)
    assert event["metadata"]["namespace"] == "ml"
    assert event["involvedObject"]["uid"] == pod.metadata.uid
    assert event["involvedObject"]["apiVersion"] == "v1"


def test_events_about_cluster_scoped_objects_go_to_default(api_client: Any) -> None:
    # kube-apiserver refuses an Event without eventTime whose involvedObject has no namespace
    # anywhere but in `default`, whatever namespace the functions keep their Leases in.
    cluster = KubeCluster(api_client, namespace="tensor-fusion-sys", now=lambda: FIXED_NOW)
    k8s.CoreV1Api(api_client).create_namespace({"metadata": {"name": "tensor-fusion-sys"}})
    cluster.record_event(
        ObjectEvent(
            kind="GPUNodeClaim", name="c1", namespace=None, event_type="Normal", reason="R", message="m"
        )
    )
    (event,) = _events(api_client)
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]


def test_an_object_recreated_under_its_name_gets_events_of_its_own(
    cluster: KubeCluster, api_client: Any
) -> None:
    def compaction() -> None:
        cluster.record_event(POOL_COMPACTION)

    cluster.create_pool(make_pool())
    compaction()
    k8s.CustomObjectsApi(api_client).delete_cluster_custom_object(
        "tensor-fusion.ai", "v1", "gpupools", "pool-a"
    )
    cluster.create_pool(make_pool())
    compaction()
    compaction()
    uids = {event["involvedObject"]["uid"]: event["count"] for event in _events(api_client)}
    assert sorted(uids.values()) == [1, 2] and len(uids) == 2


def test_an_event_about_an_object_that_is_gone_keeps_a_plain_reference(
    cluster: KubeCluster, api_client: Any
) -> None:
    cluster.record_event(
        ObjectEvent(
            kind="GPUNodeClaim", name="gone", namespace=None, event_type="Warning", reason="R", message="m"
        )
    )
    (event,) = _events(api_client)
    assert event["involvedObject"] == {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUNodeClaim",
        "name": "gone",
    }
