"""The embedded Kubernetes API server and a KubeCluster on it, for the Kubernetes adapter's contract tests.

The adapter reaches the server the way a function would: a kubeconfig file through
`kube.auth.build_api_client`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from gpupool.adapters.kube.auth import KubeAccess, build_api_client
from gpupool.adapters.kube.cluster import KubeCluster
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.ports import ObjectEvent

FIXED_NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
# A Normal Event about the pool `make_pool` makes.
POOL_COMPACTION = ObjectEvent(
    kind="GPUPool", name="pool-a", namespace=None, event_type="Normal", reason="Compaction", message="m"
)


def make_claim(name: str = "pool-a-x1", **metadata: Any) -> GPUNodeClaim:
    meta: dict[str, Any] = {"name": name, "labels": {"tensor-fusion.ai/managed-by": "pool-a"}}
    meta.update(metadata)
    return GPUNodeClaim.model_validate(
        {
            "metadata": meta,
            "spec": {
                "tflopsOffered": "125",
                "vramOffered": "24Gi",
                "gpuDeviceOffered": 1,
                "instanceType": "g5.xlarge",
                "zone": "us-east-1a",
                "capacityType": "OnDemand",
            },
        }
    )


def make_pool(name: str = "pool-a", **spec: Any) -> GPUPool:
    return GPUPool.model_validate({"metadata": {"name": name}, "spec": spec})


@pytest.fixture
def kube_api() -> Iterator[EmbeddedKubeAPI]:
    with EmbeddedKubeAPI() as api:
        yield api


@pytest.fixture
def api_client(kube_api: EmbeddedKubeAPI) -> Any:
    return build_api_client(KubeAccess(mode="kubeconfig", kubeconfig_path=str(kube_api.kubeconfig_path)))


@pytest.fixture
def cluster(api_client: Any) -> KubeCluster:
    return KubeCluster(api_client, now=lambda: FIXED_NOW)
