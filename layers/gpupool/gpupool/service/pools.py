"""Pools and their snapshots: which pools exist, and one consistent read of each.

Role: pools come from TensorFusionCluster.spec.gpuPools (materialised as GPUPool objects by
`sync_cluster_pools`, which launch calls) and from standalone GPUPools. `ClusterReads` lists
claims, nodes, GPUNodes, worker pods and node classes once per invocation; `snapshot_of`
cuts one pool's `PoolSnapshot` out of them (pool freshly read by name).

Must not: decide anything (membership rules only) or keep anything between invocations.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupool.core.decisions.pool_sync import plan_pool_sync
from gpupool.core.model.constants import LABEL_GPU_POOL, LABEL_MANAGED_BY, pool_label
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.plan import Plan
from gpupool.core.snapshot import PoolSnapshot, node_claim
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


def claim_in_pool(claim: GPUNodeClaim, pool: str) -> bool:
    labels = claim.metadata.labels
    return labels.get(LABEL_MANAGED_BY) == pool or labels.get(pool_label(pool)) == "true"


def _labelled_for(labels: dict[str, str], pool: str) -> bool:
    return labels.get(LABEL_GPU_POOL) == pool or labels.get(pool_label(pool)) == "true"


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
    """The pool's claims, nodes (by claim label or pool label on node / GPUNode), GPUNodes and workers."""
    name = pool.name
    claims = tuple(c for c in reads.claims if claim_in_pool(c, name))
    claim_names = {c.name for c in claims}
    gpu_by_name = {g.name: g for g in reads.gpu_nodes}
    nodes = []
    for node in reads.nodes:
        gpu_node = gpu_by_name.get(node.name)
        if (
            node_claim(node) in claim_names
            or _labelled_for(node.metadata.labels, name)
            or (gpu_node is not None and _labelled_for(gpu_node.metadata.labels, name))
        ):
            nodes.append(node)
    node_names = {n.name for n in nodes}
    provisioner = pool.spec.node_manager_config.node_provisioner
    class_name = provisioner.node_class if provisioner else None
    return PoolSnapshot(
        cluster_name=deps.settings.cluster_name,
        pool=pool,
        node_class=next((c for c in reads.node_classes if c.name == class_name), None),
        claims=claims,
        nodes=tuple(nodes),
        gpu_nodes=tuple(g for g in reads.gpu_nodes if g.name in node_names),
        worker_pods=tuple(p for p in reads.worker_pods if p.spec.node_name in node_names),
    )
