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
from dataclasses import dataclass, field
from functools import cached_property

from gpupool.core.model.claim_state import node_claim
from gpupool.core.model.constants import LABEL_GPU_POOL, LABEL_MANAGED_BY, LABEL_POOL_PREFIX, pool_label
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.snapshot import PoolSnapshot

__all__ = ["ClusterObjects", "PoolMembers", "claim_in_pool", "pool_snapshot"]


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

    @cached_property
    def members(self) -> dict[str, PoolMembers]:
        """Every pool's claims, nodes, GPUNodes and pods, each in these objects' order: one pass
        over the objects for all pools: a claim is in the pool its `managed-by` label or a
        `pool-<pool>=true` label names (`claim_in_pool`); a node in its claim's pools and in those
        its own or its GPUNode's `gpupool` / `pool-<pool>=true` labels name."""
        found: dict[str, PoolMembers] = {}

        def of(pool: str) -> PoolMembers:
            return found.setdefault(pool, PoolMembers())

        claim_pools: dict[str, set[str]] = {}
        for claim in self.claims:
            labels = claim.metadata.labels
            pools = _pool_labels(labels)
            if (managed_by := labels.get(LABEL_MANAGED_BY)) is not None:
                pools.add(managed_by)
            claim_pools.setdefault(claim.name, set()).update(pools)
            for pool in pools:
                of(pool).claims.append(claim)
        gpu_by_name = self.gpu_nodes_by_name
        node_pools: dict[str, set[str]] = {}
        for node in self.nodes:
            pools = set(claim_pools.get(node_claim(node) or "", ())) | _labels_for(node.metadata.labels)
            gpu_node = gpu_by_name.get(node.name)
            if gpu_node is not None:
                pools |= _labels_for(gpu_node.metadata.labels)
            node_pools.setdefault(node.name, set()).update(pools)
            for pool in pools:
                of(pool).nodes.append(node)
        for gpu_node in self.gpu_nodes:
            for pool in node_pools.get(gpu_node.name, ()):
                of(pool).gpu_nodes.append(gpu_node)
        for pod in self.worker_pods:
            for pool in node_pools.get(pod.spec.node_name or "", ()):
                of(pool).pods.append(pod)
        return found


@dataclass
class PoolMembers:
    """One pool's objects among a `ClusterObjects`, in its order."""

    claims: list[GPUNodeClaim] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    gpu_nodes: list[GPUNode] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)


def _pool_labels(labels: dict[str, str]) -> set[str]:
    """The pools `tensor-fusion.ai/pool-<pool>=true` labels name."""
    return {
        key[len(LABEL_POOL_PREFIX) :]
        for key, value in labels.items()
        if value == "true" and key.startswith(LABEL_POOL_PREFIX)
    }


def _labels_for(labels: dict[str, str]) -> set[str]:
    """The pools a node's or GPUNode's labels put it in (`_labelled_for`, for every pool at once)."""
    pools = _pool_labels(labels)
    if (named := labels.get(LABEL_GPU_POOL)) is not None:
        pools.add(named)
    return pools


def claim_in_pool(claim: GPUNodeClaim, pool: str) -> bool:
    labels = claim.metadata.labels
    return labels.get(LABEL_MANAGED_BY) == pool or labels.get(pool_label(pool)) == "true"


def pool_snapshot(cluster_name: str, pool: GPUPool, objects: ClusterObjects) -> PoolSnapshot:
    """The pool's claims, nodes (by claim label or pool label on node / GPUNode), GPUNodes and workers."""
    members = objects.members.get(pool.name) or PoolMembers()
    node_names = {n.name for n in members.nodes}
    provisioner = pool.spec.node_manager_config.node_provisioner
    class_name = provisioner.node_class if provisioner else None
    return PoolSnapshot(
        cluster_name=cluster_name,
        pool=pool,
        node_class=next((c for c in objects.node_classes if c.name == class_name), None),
        claims=tuple(members.claims),
        nodes=tuple(members.nodes),
        gpu_nodes=tuple(members.gpu_nodes),
        worker_pods=tuple(members.pods),
        pods_read_on=None if objects.pods_read_on is None else objects.pods_read_on & node_names,
    )
