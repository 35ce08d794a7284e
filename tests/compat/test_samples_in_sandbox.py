"""TensorFusion's stored samples in the embedded Kubernetes API server, read by every reader
gpupool has: the Kubernetes adapter (what the launch, bind and compact functions list), one
launch invocation over them, and the relay's watches — all read, nothing skipped, no Warning.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.core.intake.causes import Reconcile
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.deps import Deps
from gpupool.service.launch import handle_launch
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.kube import KubeWriter, start_watches
from tests.compat.samples import documents, store
from tests.contract.kube import test_service_on_real_adapters as real_adapters

world = real_adapters.world  # EC2 on moto and the embedded API server, with pool-a to launch for
STORED = documents()


def _names(kind: str) -> set[str]:
    return {doc["metadata"]["name"] for doc in STORED if doc["kind"] == kind}


def _unreadable_warnings(api_client: Any) -> list[str]:
    events = client.CoreV1Api(api_client).list_event_for_all_namespaces().items
    return [e.message for e in events if e.reason == "UnreadableSpec"]


@pytest.fixture
def sandbox() -> Iterator[Any]:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        store(api_client, STORED)
        try:
            yield api_client
        finally:
            api_client.close()


def test_the_kubernetes_adapter_reads_every_sample(sandbox: Any) -> None:
    cluster = KubeCluster(sandbox)
    assert {c.name for c in cluster.list_clusters()} == _names("TensorFusionCluster")
    assert {p.name for p in cluster.list_pools()} == _names("GPUPool")
    assert {c.name for c in cluster.list_node_classes()} == _names("GPUNodeClass")
    assert {c.name for c in cluster.list_claims()} == _names("GPUNodeClaim")
    assert {n.name for n in cluster.list_gpu_nodes()} == _names("GPUNode")
    gpus = cluster.list_gpus()
    assert {g.name for g in gpus} == _names("GPU")
    assert gpus[0].status is not None and gpus[0].status.nv_link == {"peers": [{"index": 1, "links": 4}]}
    pool = cluster.get_pool("multi-vendor")
    assert [rule.mode for rule in pool.spec.node_manager_config.isolation_mode_rules] == [
        "partitioned",
        "hard",
    ]
    assert _unreadable_warnings(sandbox) == []


def test_what_tensor_fusions_schema_accepts_is_stored_and_read_normalised() -> None:
    with EmbeddedKubeAPI() as api:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        store(api_client, documents("lenient.yaml"))
        cluster = KubeCluster(api_client)
        pool = cluster.get_pool("lenient")
        compaction = pool.spec.node_manager_config.node_compaction
        assert compaction is not None and compaction.period == "24h"
        node_class = next(c for c in cluster.list_node_classes() if c.name == "sizes")
        ebs = node_class.spec.block_device_mappings[0].ebs
        assert ebs is not None and str(ebs.volume_size) == "100Gi"
        claim = cluster.get_claim("lowercase")
        assert claim.spec.capacity_type == "Spot"
        assert _unreadable_warnings(api_client) == []
        api_client.close()


def test_the_relay_watches_read_every_sample(sandbox: Any) -> None:
    hub = SchedulerHub(KubeWriter(sandbox))
    stop = threading.Event()
    start_watches(sandbox, hub, stop)
    try:
        assert hub.synced.wait(10), "relay watches did not sync"
        assert set(hub.policies.pools) == _names("GPUPool")
        assert set(hub.policies.profiles.get("team", {})) == _names("WorkloadProfile")
        assert "team" in hub.policies.quotas
        assert hub.policies.template_modes["default-schedule-template"].value == "NodeCompactGPULowLoad"
        assert set(hub.allocator.state.gpus) == _names("GPU")
        assert _unreadable_warnings(sandbox) == []
    finally:
        stop.set()


def test_one_launch_invocation_over_the_samples(world: tuple[Deps, Any, EmbeddedKubeAPI]) -> None:
    deps, ec2, api = world
    api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
    store(api_client, [doc for doc in STORED if doc["kind"] != "GPUNodeClaim"])
    outcome = handle_launch(Reconcile(pool=None, trigger="schedule", event_id="evt-samples"), deps)
    assert not outcome.errors, outcome.errors
    real_adapters._assert_one_instance_per_claim(deps, ec2)
    assert _unreadable_warnings(api_client) == []
