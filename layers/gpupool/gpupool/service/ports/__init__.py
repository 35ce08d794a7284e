"""Ports: the small capabilities the service needs from the outside world.

Role: `compute` — `Compute`, `CloudProvider` and `Clock`; `cluster` — the Kubernetes port by role
(`Claims`, `Pools`, `Nodes`, `Pods`, `Events`, `Leases`, …) and `Cluster`, all roles together;
`arguments` — the objects the port's wide calls carry (`ObjectEvent`, `ClaimMetadataPatch`,
`NodePatch`). Each method's docstring is its contract: what it does, what it returns, and which
domain errors (`gpupool.service.errors`) it raises. Adapters (`gpupool.adapters`) implement
them; service tests use in-memory ones (`gpupool.testing.memory_ports`).

Must not: contain logic, import an SDK, or know about dry-run (the executor never calls a
port in dry-run; adapters never check for it).
"""

from gpupool.service.ports.arguments import ClaimMetadataPatch, EventType, NodePatch, ObjectEvent
from gpupool.service.ports.cluster import (
    CLUSTER_METHODS,
    CLUSTER_ROLES,
    Claims,
    Cluster,
    Events,
    GPUs,
    Leases,
    NodeClasses,
    Nodes,
    Pods,
    Pools,
    TensorFusionClusters,
)
from gpupool.service.ports.compute import Clock, CloudProvider, Compute

__all__ = [
    "CLUSTER_METHODS",
    "CLUSTER_ROLES",
    "ClaimMetadataPatch",
    "Claims",
    "Clock",
    "CloudProvider",
    "Cluster",
    "Compute",
    "EventType",
    "Events",
    "GPUs",
    "Leases",
    "NodeClasses",
    "NodePatch",
    "Nodes",
    "ObjectEvent",
    "Pods",
    "Pools",
    "TensorFusionClusters",
]
