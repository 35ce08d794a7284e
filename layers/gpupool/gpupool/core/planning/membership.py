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

from gpupool.core.model.constants import (
    LABEL_GPU_POOL,
    LABEL_MANAGED_BY,
    LABEL_NODE_PROVISIONER,
    LABEL_POOL_PREFIX,
    pool_label,
)
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.snapshot import PoolSnapshot

__all__ = ["ClusterObjects", "PoolMembers", "claim_in_pool", "pool_snapshot"]


@dataclass(frozen=True)
class ClusterObjects:
    """One read of everything a pool snapshot is cut from.

    `earlier` (optional, one per invocation, shared by its reads) keeps the last node membership
    worked out: a read whose nodes and GPUNodes are the very objects of the one before, and
    whose claims put the claims those nodes name in the same pools, takes it instead of scanning
    every node's labels again (a read after a few claim writes)."""

    claims: Sequence[GPUNodeClaim] = ()
    nodes: Sequence[Node] = ()
    gpu_nodes: Sequence[GPUNode] = ()
    worker_pods: Sequence[Pod] = ()
    node_classes: Sequence[GPUNodeClass] = ()
    # The nodes whose pods `worker_pods` holds; None: every node's (see PoolSnapshot).
    pods_read_on: frozenset[str] | None = None
    earlier: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def gpu_nodes_by_name(self) -> dict[str, GPUNode]:
        """Built once for every pool cut from these objects."""
        return {g.name: g for g in self.gpu_nodes}

    @cached_property
    def members(self) -> dict[str, PoolMembers]:
        """Every pool's claims, nodes, GPUNodes and pods, each in these objects' order: one pass
        over the objects for all pools: a claim is in the pool its `managed-by` label or a
        `pool-<pool>=true` label names (`claim_in_pool`); a node in its claim's pools and in those
        its own or its GPUNode's `gpupool` / `pool-<pool>=true` labels name. (The label scans are
        written out in the loops: they run for every object of a big cluster, per read.)"""
        found: dict[str, PoolMembers] = {}
        prefix, cut = LABEL_POOL_PREFIX, len(LABEL_POOL_PREFIX)
        claim_pools: dict[str, set[str]] = {}
        for claim in self.claims:
            labels = claim.metadata.labels
            pools = {key[cut:] for key, value in labels.items() if value == "true" and key.startswith(prefix)}
            if (managed_by := labels.get(LABEL_MANAGED_BY)) is not None:
                pools.add(managed_by)
            claim_pools.setdefault(claim.metadata.name or "", set()).update(pools)
            for pool in pools:
                (found.get(pool) or found.setdefault(pool, PoolMembers())).claims.append(claim)
        last = self.earlier.get("nodes")
        if isinstance(last, _NodeMembership) and last.holds(self.nodes, self.gpu_nodes, claim_pools):
            nodes = last
        else:
            nodes = self._node_membership(claim_pools)
            self.earlier["nodes"] = nodes
        for pool, (pool_nodes, pool_gpu_nodes) in nodes.by_pool.items():
            members = found.get(pool) or found.setdefault(pool, PoolMembers())
            members.nodes.extend(pool_nodes)
            members.gpu_nodes.extend(pool_gpu_nodes)
        no_pools: frozenset[str] = frozenset()
        for pod in self.worker_pods:
            for pool in nodes.node_pools.get(pod.spec.node_name or "", no_pools):
                found[pool].pods.append(pod)
        return found

    def _node_membership(self, claim_pools: dict[str, set[str]]) -> _NodeMembership:
        prefix, cut = LABEL_POOL_PREFIX, len(LABEL_POOL_PREFIX)
        gpu_by_name = self.gpu_nodes_by_name
        node_pools: dict[str, set[str]] = {}
        by_pool: dict[str, tuple[list[Node], list[GPUNode]]] = {}
        named_claims: dict[str, frozenset[str]] = {}
        no_pools: set[str] = set()
        for node in self.nodes:
            meta = node.metadata
            name = meta.name or ""
            labels = meta.labels
            owner = labels.get(LABEL_NODE_PROVISIONER) or ""
            pools = set(claim_pools.get(owner, no_pools))
            named_claims[owner] = frozenset(pools)
            gpu_node = gpu_by_name.get(name)
            for labelled in (labels, gpu_node.metadata.labels) if gpu_node is not None else (labels,):
                for key, value in labelled.items():
                    if value == "true" and key.startswith(prefix):
                        pools.add(key[cut:])
                if (named := labelled.get(LABEL_GPU_POOL)) is not None:
                    pools.add(named)
            node_pools.setdefault(name, set()).update(pools)
            for pool in pools:
                (by_pool.get(pool) or by_pool.setdefault(pool, ([], [])))[0].append(node)
        for gpu_node in self.gpu_nodes:
            for pool in node_pools.get(gpu_node.metadata.name or "", no_pools):
                by_pool[pool][1].append(gpu_node)
        return _NodeMembership(
            nodes=tuple(self.nodes),
            gpu_nodes=tuple(self.gpu_nodes),
            named_claims=named_claims,
            node_pools={name: frozenset(pools) for name, pools in node_pools.items()},
            by_pool={pool: (tuple(n), tuple(g)) for pool, (n, g) in by_pool.items()},
        )


@dataclass(frozen=True)
class _NodeMembership:
    """The nodes' and GPUNodes' pools as one read worked them out, and what they depended on:
    those very objects, and the pools of the claims the nodes name (`named_claims`)."""

    nodes: tuple[Node, ...]
    gpu_nodes: tuple[GPUNode, ...]
    named_claims: dict[str, frozenset[str]]
    node_pools: dict[str, frozenset[str]]
    by_pool: dict[str, tuple[tuple[Node, ...], tuple[GPUNode, ...]]]

    def holds(
        self, nodes: Sequence[Node], gpu_nodes: Sequence[GPUNode], claim_pools: dict[str, set[str]]
    ) -> bool:
        """Whether it is the membership of `nodes` and `gpu_nodes` under `claim_pools`."""
        return (
            _same(self.nodes, nodes)
            and _same(self.gpu_nodes, gpu_nodes)
            and all(claim_pools.get(name, set()) == pools for name, pools in self.named_claims.items())
        )


def _same(kept: Sequence[object], now: Sequence[object]) -> bool:
    return len(kept) == len(now) and all(a is b for a, b in zip(kept, now, strict=True))


@dataclass
class PoolMembers:
    """One pool's objects among a `ClusterObjects`, in its order."""

    claims: list[GPUNodeClaim] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    gpu_nodes: list[GPUNode] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)


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
