"""The Kubernetes ports every cloud's wiring builds, all on one `ApiClient` built on first use.

Role: `kube_ports(api_client, namespace=…, request_timeout_s=…, now=…)` — `KubeCluster`,
`KubeKarpenter` and `KubeDeliveryLedger`, each built lazily (`adapters.environment.Lazy`) over
the one client `api_client()` returns when a port is first used; so a cloud's wiring says only
how it reaches the API server (`kube.auth`), never how the ports are put together.

Must not: read the environment, choose an access mode, or import the kubernetes client at
module import (the functions' cold start pays for it only when a port is used).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from gpupool.adapters.environment import Lazy
from gpupool.service.deliveries import DeliveryLedger
from gpupool.service.karpenter_ports import KarpenterApi
from gpupool.service.ports import Cluster

__all__ = ["KubePorts", "kube_ports"]


@dataclass(frozen=True)
class KubePorts:
    """The Kubernetes-backed ports of a deployment (each built on first use)."""

    cluster: Cluster
    karpenter: KarpenterApi
    deliveries: DeliveryLedger


def kube_ports(
    api_client: Callable[[], Any], *, namespace: str, request_timeout_s: float, now: Callable[[], datetime]
) -> KubePorts:
    """The ports on the `ApiClient` `api_client()` builds (called once, on the first port used)."""
    kube = Lazy(api_client)

    def cluster() -> Cluster:
        from gpupool.adapters.kube.cluster import KubeCluster

        return KubeCluster(kube.resolve(), namespace=namespace, request_timeout_s=request_timeout_s, now=now)

    def karpenter() -> KarpenterApi:
        from gpupool.adapters.kube.karpenter import KubeKarpenter

        return KubeKarpenter(kube.resolve(), request_timeout_s=request_timeout_s)

    def deliveries() -> DeliveryLedger:
        from gpupool.adapters.kube.deliveries import KubeDeliveryLedger

        return KubeDeliveryLedger(kube.resolve(), namespace=namespace, request_timeout_s=request_timeout_s)

    return KubePorts(
        cluster=cast(Cluster, Lazy(cluster)),
        karpenter=cast(KarpenterApi, Lazy(karpenter)),
        deliveries=cast(DeliveryLedger, Lazy(deliveries)),
    )
