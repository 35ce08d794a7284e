"""Which objects belong to a pool: the one cut of a cluster's objects into a `PoolSnapshot`.

Role: `pool_snapshot(cluster_name, pool, objects)` — the pool's claims (by
`tensor-fusion.ai/managed-by` or the pool label), its nodes (by the claim they were provisioned
for, or the pool label on the node or its GPUNode), the GPUNodes of those nodes and the
TensorFusion pods read on them. The services cut what they read from the cluster with it, and
`gpupool plan --state` cuts the objects of its state file with it, so both plan from the same
snapshot.

Must not: read anything (the caller lists the objects) or decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from gpupool.core.model.claim_state import node_claim
from gpupool.core.model.constants import LABEL_GPU_POOL, LABEL_MANAGED_BY, pool_label
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.snapshot import PoolSnapshot

__all__ = ["ClusterObjects", "claim_in_pool", "pool_snapshot"]


@dataclass(frozen=True)
class ClusterObjects:
    """One read of everything a pool snapshot is cut from."""

    claims: Sequence[GPUNodeClaim] = ()
    nodes: Sequence[Node] = ()
    gpu_nodes: Sequence[GPUNode] = ()
    worker_pods: Sequence[Pod] = ()
    node_classes: Sequence[GPUNodeClass] = ()
    # The nodes whose pods `worker_pods` holds; None: every node's (see PoolSnapshot).
    pods_read_on: frozenset[str] | None = None

    @cached_property
    def gpu_nodes_by_name(self) -> dict[str, GPUNode]:
        """Built once for every pool cut from these objects."""
        return {g.name: g for g in self.gpu_nodes}


def claim_in_pool(claim: GPUNodeClaim, pool: str) -> bool:
    labels = claim.metadata.labels
    return labels.get(LABEL_MANAGED_BY) == pool or labels.get(pool_label(pool)) == "true"


def _labelled_for(labels: dict[str, str], pool: str) -> bool:
    return labels.get(LABEL_GPU_POOL) == pool or labels.get(pool_label(pool)) == "true"


def pool_snapshot(cluster_name: str, pool: GPUPool, objects: ClusterObjects) -> PoolSnapshot:
    """The pool's claims, nodes (by claim label or pool label on node / GPUNode), GPUNodes and workers."""
    name = pool.name
    claims = tuple(c for c in objects.claims if claim_in_pool(c, name))
    claim_names = {c.name for c in claims}
    gpu_by_name = objects.gpu_nodes_by_name
    nodes = []
    for node in objects.nodes:
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
        cluster_name=cluster_name,
        pool=pool,
        node_class=next((c for c in objects.node_classes if c.name == class_name), None),
        claims=claims,
        nodes=tuple(nodes),
        gpu_nodes=tuple(g for g in objects.gpu_nodes if g.name in node_names),
        worker_pods=tuple(p for p in objects.worker_pods if p.spec.node_name in node_names),
        pods_read_on=None if objects.pods_read_on is None else objects.pods_read_on & node_names,
    )
