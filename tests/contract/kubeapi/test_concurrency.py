"""Concurrent clients: parallel writes get distinct, increasing resourceVersions and no
errors; of several read-modify-write attempts on one Lease from the same version exactly
one wins and the rest get 409 (the guard gpupool's functions rely on)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from kubeapi_builders import node
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI


def _client(kube_api: EmbeddedKubeAPI) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(kube_api.kubeconfig_path))


def test_parallel_creates_get_distinct_resource_versions(kube_api: EmbeddedKubeAPI) -> None:
    def create_batch(worker: int) -> list[int]:
        core = client.CoreV1Api(_client(kube_api))
        return [int(core.create_node(node(f"w{worker}-n{i}")).metadata.resource_version) for i in range(20)]

    with ThreadPoolExecutor(max_workers=6) as pool:
        batches = list(pool.map(create_batch, range(6)))
    versions = [rv for batch in batches for rv in batch]
    assert len(set(versions)) == 120
    assert all(batch == sorted(batch) for batch in batches)
    core = client.CoreV1Api(_client(kube_api))
    assert len(core.list_node().items) == 120


def test_one_winner_among_racing_lease_updates(kube_api: EmbeddedKubeAPI) -> None:
    leases = client.CoordinationV1Api(_client(kube_api))
    leases.create_namespaced_lease(
        "default", {"metadata": {"name": "pool-a"}, "spec": {"holderIdentity": "nobody"}}
    )
    for round_number in range(5):
        seen = leases.read_namespaced_lease("pool-a", "default")

        def take(contender: int, snapshot: client.V1Lease = seen, attempt: int = round_number) -> bool:
            own = client.CoordinationV1Api(_client(kube_api))
            body = own.api_client.sanitize_for_serialization(snapshot)
            body["spec"]["holderIdentity"] = f"fn-{contender}-{attempt}"  # differs from the current holder
            try:
                own.replace_namespaced_lease("pool-a", "default", body)
            except ApiException as error:
                assert error.status == 409
                return False
            return True

        with ThreadPoolExecutor(max_workers=4) as pool:
            outcomes = list(pool.map(take, range(4)))
        assert outcomes.count(True) == 1, f"round {round_number}: {outcomes}"
        holder = leases.read_namespaced_lease("pool-a", "default").spec.holder_identity
        assert holder == f"fn-{outcomes.index(True)}-{round_number}"
