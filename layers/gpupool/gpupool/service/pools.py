"""Pools and their snapshots: which pools exist, and one consistent read of each.

Role: pools come from TensorFusionCluster.spec.gpuPools (materialised as GPUPool objects by
`sync_cluster_pools`, which launch calls) and from standalone GPUPools. `ClusterReads` lists
claims, nodes, GPUNodes, worker pods and node classes once per invocation; `snapshot_of`
cuts one pool's `PoolSnapshot` out of them (pool freshly read by name) with the core's one
membership rule (`planning.membership`, which `gpupool plan --state` uses too).

Must not: decide anything, re-implement membership, or keep anything between invocations.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupool.core.decisions.pool_sync import plan_pool_sync
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.membership import ClusterObjects, claim_in_pool, pool_snapshot
from gpupool.core.planning.plan import Plan
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.service.deps import Deps
from gpupool.service.executor import ActionResult, Executor

__all__ = ["ClusterReads", "claim_in_pool", "select_pools", "snapshot_of", "sync_cluster_pools"]


def sync_cluster_pools(deps: Deps, executor: Executor) -> tuple[Plan, list[ActionResult]]:
    """Create / update the GPUPools every TensorFusionCluster's spec.gpuPools declares."""
    plan = plan_pool_sync(deps.cluster.list_clusters(), deps.cluster.list_pools())
    return plan, executor.apply(plan)


def select_pools(deps: Deps, name: str | None) -> list[GPUPool]:
    """Every pool (or the one named), by name."""
    pools = sorted(deps.cluster.list_pools(), key=lambda p: p.name)
    return [p for p in pools if name is None or p.name == name]


@dataclass(frozen=True)
class ClusterReads:
    """One read of everything a pool snapshot is cut from."""

    claims: tuple[GPUNodeClaim, ...]
    nodes: tuple[Node, ...]
    gpu_nodes: tuple[GPUNode, ...]
    worker_pods: tuple[Pod, ...]
    node_classes: tuple[GPUNodeClass, ...]

    @classmethod
    def load(cls, deps: Deps) -> ClusterReads:
        cluster = deps.cluster
        return cls(
            claims=tuple(cluster.list_claims()),
            nodes=tuple(cluster.list_nodes()),
            gpu_nodes=tuple(cluster.list_gpu_nodes()),
            worker_pods=tuple(cluster.list_pods(worker_only=True)),
            node_classes=tuple(cluster.list_node_classes()),
        )


def snapshot_of(deps: Deps, pool: GPUPool, reads: ClusterReads) -> PoolSnapshot:
    """The pool's snapshot cut from one read (`planning.membership.pool_snapshot`)."""
    objects = ClusterObjects(
        reads.claims, reads.nodes, reads.gpu_nodes, reads.worker_pods, reads.node_classes
    )
    return pool_snapshot(deps.settings.cluster_name, pool, objects)
