"""Every Kubernetes request the relay and the functions' adapters really make is in their call lists.

Each request the official client sends to the sandbox is recorded and turned into RBAC's view
(apiGroup, resource[/subresource], verb). The relay side runs its hub watches, bind's writes, the
migration taint, the forwarder, one Lease election and one token check; the functions' side calls
every public method of `KubeCluster` (a new method fails this test until it is exercised here and
its calls are listed). tests/unit/test_chart_wiring.py then checks the lists against the chart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import config

from gpupool.adapters.kube.calls import FUNCTION_CLUSTER_CALLS, FUNCTION_NAMESPACE_CALLS
from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.adapters.kube.deliveries import KubeDeliveryLedger
from gpupool.core.model.cluster import TensorFusionClusterStatus
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.model.pool import GPUPool, GPUPoolStatus
from gpupool.core.model.unreadable import UnreadableObject
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.reviews import book_of
from gpupool.sandbox.kubeapi.routes import ResourcePath, parse
from gpupool.service.ports import ClaimMetadataPatch, NodePatch, ObjectEvent
from gpupool_incluster.relay.access import DEFAULT_AUDIENCE, TokenAccess
from gpupool_incluster.relay.forwarder import Forwarder, ForwardSettings
from gpupool_incluster.relay.hub import HubSettings, SchedulerHub
from gpupool_incluster.relay.informers import SharedInformers
from gpupool_incluster.relay.kube import KubeWriter, subscribe_hub
from gpupool_incluster.relay.kube_calls import RELAY_CLUSTER_CALLS, RELAY_NAMESPACE_CALLS
from gpupool_incluster.relay.lease import LeaderElector, LeaseTimings
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import make_signer
from gpupool_incluster.relay.unreadable import event_reporter

Call = tuple[str, str, str]
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _as_rbac(method: str, url: str) -> Call:
    parts = urlsplit(url)
    target = parse(parts.path)
    assert isinstance(target, ResourcePath), f"not a resource request: {method} {url}"
    resource = target.plural + (f"/{target.subresource}" if target.subresource else "")
    if method == "GET":
        watching = parse_qs(parts.query).get("watch", [""])[0] in ("true", "True", "1")
        verb = "get" if target.name else ("watch" if watching else "list")
    else:
        verb = VERBS[method] if target.name or method == "POST" else "deletecollection"
    return (target.group, resource, verb)


class Recorder:
    def __init__(self, api_client: Any) -> None:
        self.calls: set[Call] = set()
        self._lock = threading.Lock()
        rest = api_client.rest_client
        original = rest.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls.add(_as_rbac(method, url))
            return original(method, url, *args, **kwargs)

        rest.request = request


@pytest.fixture
def sandbox() -> Iterator[tuple[EmbeddedKubeAPI, Any, Recorder]]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        try:
            yield api, api_client, Recorder(api_client)
        finally:
            api_client.close()


def test_every_call_the_relay_makes_is_listed(sandbox: tuple[EmbeddedKubeAPI, Any, Recorder]) -> None:
    api, api_client, recorder = sandbox
    cluster = api.cluster
    cluster.create(cluster.resolve("", "v1", "nodes"), None, {"metadata": {"name": "n"}})
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    cluster.create(cluster.resolve("", "v1", "pods"), "default", pod)
    stop = threading.Event()
    writer = KubeWriter(api_client)
    hub = SchedulerHub(writer, HubSettings(progressive_migration=True), tainter=writer)
    metrics = RelayMetrics()
    informers = SharedInformers(api_client, metrics=metrics, stop=stop)
    subscribe_hub(hub, informers, stop)
    forwarder = Forwarder(
        informers, make_signer("none"), ForwardSettings(urls={"bind": "http://127.0.0.1:9/"}), metrics
    )
    forwarder.start()
    elector = LeaderElector(
        api_client, namespace="default", name="gpupool-relay", identity="me", on_started=lambda: None,
        on_stopped=lambda: None, timings=LeaseTimings(lease_duration=3, renew_deadline=2, retry_period=0.1),
    )  # fmt: skip
    elector.start()
    book_of(cluster).add_token("t", "u", audiences=["gpupool-relay"])
    try:
        assert hub.synced.wait(10)
        deadline = time.monotonic() + 10
        while not forwarder.synced() and time.monotonic() < deadline:
            time.sleep(0.05)
        writer.read_pod("default", "p")
        writer.annotate_pod("default", "p", {"a": "b"})
        writer.bind_pod("default", "p", "", "n")
        writer.set_used_by_taint("n", True)
        TokenAccess(api_client, audiences=(DEFAULT_AUDIENCE,)).check("Bearer t", "get", "/api/allocation")
        report = event_reporter(api_client)  # a watched object the relay cannot read: its Warning Event
        for kind in ("GPUPool", "GPUPool", "GPUNodeClaim"):  # the same Event twice is counted up
            report(UnreadableObject(kind=kind, name="broken", namespace=None, message="spec: unreadable"))
        time.sleep(1.0)  # watches opened after their lists; the Lease renewed (get + update)
    finally:
        forwarder.stop()
        informers.stop()
        elector.abandon()
    made = set(recorder.calls)
    assert made - (RELAY_CLUSTER_CALLS | RELAY_NAMESPACE_CALLS) == set(), "calls missing from kube_calls.py"
    leases = {c for c in made if c[1] == "leases"}
    assert leases == RELAY_NAMESPACE_CALLS
    unexercised = RELAY_CLUSTER_CALLS - made - {("karpenter.sh", "nodeclaims", "watch")}
    assert unexercised == set(), "listed calls this test never saw the relay make"


def _claim(name: str) -> GPUNodeClaim:
    return GPUNodeClaim.model_validate(
        {
            "metadata": {"name": name, "labels": {"tensor-fusion.ai/managed-by": "pool-a"}},
            "spec": {"tflopsOffered": "125", "vramOffered": "24Gi", "gpuDeviceOffered": 1},
        }
    )


def test_every_call_the_functions_adapters_make_is_listed(
    sandbox: tuple[EmbeddedKubeAPI, Any, Recorder],
) -> None:
    api, api_client, recorder = sandbox
    cluster = api.cluster
    cluster.create(cluster.resolve("", "v1", "nodes"), None, {"metadata": {"name": "n"}})
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], "nodeName": "n"}}
    cluster.create(cluster.resolve("", "v1", "pods"), "default", pod)
    gpu_nodes = cluster.resolve("tensor-fusion.ai", "v1", "gpunodes")
    cluster.create(
        gpu_nodes, None, {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUNode", "metadata": {"name": "n"}}
    )

    def relisted(listing: Any, plural: str, namespace: str, name: str, group: str = "") -> None:
        """List, change one object, list again: a kept kind's second read watches from the list."""
        listing()
        rt = cluster.resolve(group, "v1", plural)
        change = {"metadata": {"labels": {"changed": str(time.monotonic_ns())}}}
        cluster.patch(rt, namespace, name, change, "application/merge-patch+json", subresource=None)
        listing()

    kube = KubeCluster(api_client, now=lambda: datetime(2026, 12, 1, tzinfo=UTC))
    pool = kube.create_pool(GPUPool.model_validate({"metadata": {"name": "pool-a"}, "spec": {}}))
    kube.create_claim(_claim("claim-a"))
    version = lambda obj: obj.metadata.resource_version or ""  # noqa: E731
    calls = {
        "list_clusters": lambda: kube.list_clusters(),
        "list_pools": lambda: kube.list_pools(),
        "get_pool": lambda: kube.get_pool("pool-a"),
        "list_node_classes": lambda: kube.list_node_classes(),
        "list_claims": lambda: relisted(kube.list_claims, "gpunodeclaims", "", "claim-a", "tensor-fusion.ai"),
        "get_claim": lambda: kube.get_claim("claim-a"),
        "list_gpu_nodes": lambda: relisted(kube.list_gpu_nodes, "gpunodes", "", "n", "tensor-fusion.ai"),
        "list_gpus": lambda: kube.list_gpus(),
        "list_nodes": lambda: [
            relisted(lambda: kube.list_nodes(summary=True), "nodes", "", "n"),
            kube.list_nodes(labels={"x": "y"}),
        ],
        "list_pods": lambda: [kube.list_pods(node_name="n"), kube.list_pods(node_name="", phase="Pending")],
        "list_pod_disruption_budgets": lambda: kube.list_pod_disruption_budgets(),
        "create_pool": lambda: None,  # called above
        "create_claim": lambda: None,  # called above
        "replace_pool_spec": lambda: kube.replace_pool_spec(
            pool, resource_version=version(kube.get_pool("pool-a"))
        ),
        "patch_pool_annotations": lambda: kube.patch_pool_annotations(
            "pool-a", {"x/y": "1"}, resource_version=version(kube.get_pool("pool-a"))
        ),
        "update_cluster_status": lambda: kube.update_cluster_status(
            "tf", TensorFusionClusterStatus.model_validate({}), resource_version="1"
        ),
        "update_pool_status": lambda: kube.update_pool_status(
            "pool-a",
            GPUPoolStatus.model_validate({"phase": "Running"}),
            resource_version=version(kube.get_pool("pool-a")),
        ),
        "update_claim_status": lambda: kube.update_claim_status(
            "claim-a",
            GPUNodeClaimStatus.model_validate({"phase": "Pending"}),
            resource_version=version(kube.get_claim("claim-a")),
        ),
        "patch_claim_metadata": lambda: kube.patch_claim_metadata(
            "claim-a",
            ClaimMetadataPatch(labels={"x": "y"}, resource_version=version(kube.get_claim("claim-a"))),
        ),
        "delete_claim": lambda: kube.delete_claim("claim-a"),
        "patch_node": lambda: kube.patch_node("n", NodePatch(labels={"x": "y"}, unschedulable=True)),
        "evict_pod": lambda: kube.evict_pod("default", "p"),
        "record_event": lambda: [
            kube.record_event(
                ObjectEvent(
                    kind=kind, name=name, namespace=ns, event_type="Normal", reason="Test", message="m"
                )
            )
            for kind, name, ns in (
                ("Pod", "p", "default"),
                ("Pod", "p", "default"),
                ("GPUPool", "pool-a", None),
                ("Node", "n", None),
                ("GPUNode", "n", None),
            )
        ],
        "try_acquire_lease": lambda: [
            kube.try_acquire_lease(
                "pool-a", holder="h", now=datetime.now(UTC), duration=timedelta(seconds=30)
            )
            for _ in range(2)
        ],
        "release_lease": lambda: kube.release_lease("pool-a", holder="h"),
    }
    public = {name for name in dir(KubeCluster) if not name.startswith("_")}
    assert public == set(calls), "a KubeCluster method this test does not exercise (or a stale entry)"
    for name, call in calls.items():
        try:
            call()
        except Exception as exc:  # the request was made either way; a refusal is not what is checked here
            print(f"{name}: {type(exc).__name__}: {exc}")
    # The delivery ledger (the same client, the same Lease namespace): take, finish, drop, prune.
    ledger = KubeDeliveryLedger(api_client, namespace="default", request_timeout_s=10)
    now = datetime.now(UTC)
    ledger.claim("k1", holder="h", now=now, hold_for=timedelta(seconds=30))
    ledger.claim("k1", holder="other", now=now, hold_for=timedelta(seconds=30))
    ledger.complete("k1", holder="h", now=now, keep_for=timedelta(seconds=1))
    ledger.claim("k2", holder="h", now=now, hold_for=timedelta(seconds=30))
    ledger.release("k2", holder="h")
    ledger.prune(now=now + timedelta(seconds=5))
    made = set(recorder.calls)
    assert made - (FUNCTION_CLUSTER_CALLS | FUNCTION_NAMESPACE_CALLS) == set(), (
        "calls missing from kube_calls.py"
    )
    assert {c for c in made if c[1] == "leases"} == FUNCTION_NAMESPACE_CALLS
    assert FUNCTION_CLUSTER_CALLS - made == set(), "listed calls this test never saw the adapters make"
