"""Pools and their snapshots: which pools exist, and the one read of the cluster they are cut from.

Role: pools come from TensorFusionCluster.spec.gpuPools (materialised as GPUPool objects by
`sync_cluster_pools`, which launch calls) and from standalone GPUPools. `ClusterReads` is what a
pool snapshot is cut from — claims, node and GPUNode summaries (what `kubectl get` prints of
them: all the decisions read), node classes (launch's only) and the
pods read so far on chosen nodes, TensorFusion ones only (`core.vocabulary.pods`) — taken from the
invocation's `InvocationCluster` (each kind read once per invocation; `with_pods_on` reads one node's
pods with the API server's `spec.nodeName` field selector). `snapshot_of` cuts one pool's
`PoolSnapshot` out of it with the core's one membership rule (`planning.membership`, which
`gpupool plan --state` uses too) — once per read and pool spec: the reads stay the same while
only pools and clusters are written (`InvocationCluster.snapshot_changes`), and a pool whose status or
annotations were written keeps its cut, with the pool as written.

Must not: decide anything, re-implement membership, or keep anything between invocations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from gpupool.core.decisions.pool_sync import plan_pool_sync
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.membership import ClusterObjects, claim_in_pool, pool_snapshot
from gpupool.core.planning.plan import Plan
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.vocabulary.pods import is_tensorfusion_pod
from gpupool.service.deps import Deps
from gpupool.service.executor import ActionResult, Executor
from gpupool.service.invocation_cluster import InvocationCluster
from gpupool.service.ports import Pods, Pools

__all__ = [
    "ClusterReads",
    "claim_in_pool",
    "select_pools",
    "snapshot_of",
    "sync_cluster_pools",
    "with_pods_of",
]


def sync_cluster_pools(deps: Deps, executor: Executor) -> tuple[Plan, list[ActionResult]]:
    """Create / update the GPUPools every TensorFusionCluster's spec.gpuPools declares."""
    plan = plan_pool_sync(deps.cluster.list_clusters(), deps.cluster.list_pools())
    return plan, executor.apply(plan)


def select_pools(pools: Pools, name: str | None) -> list[GPUPool]:
    """Every pool (or the one named), by name."""
    listed = sorted(pools.list_pools(), key=lambda p: p.name)
    return [p for p in listed if name is None or p.name == name]


@dataclass(frozen=True)
class ClusterReads:
    """One read of everything a pool snapshot is cut from; `pods` are the TensorFusion pods on
    the nodes `pods_read_on` names (no other node's pods were read)."""

    claims: tuple[GPUNodeClaim, ...]
    nodes: tuple[Node, ...]
    gpu_nodes: tuple[GPUNode, ...]
    node_classes: tuple[GPUNodeClass, ...] = ()
    pods: tuple[Pod, ...] = ()
    pods_read_on: frozenset[str] = frozenset()
    # The invocation's membership memo (`InvocationCluster.membership`; see ClusterObjects.earlier).
    membership: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, deps: Deps, *, node_classes: bool = False) -> ClusterReads:
        """What `deps.cluster` holds now (read once per invocation by its `InvocationCluster`); the
        node classes only when asked (launch's decision names its node class; no other reads it)."""
        cluster = deps.cluster
        if isinstance(cluster, InvocationCluster):
            cluster.prefetch(node_classes=node_classes)
            kept = cluster.memo.get(("reads", node_classes))
            if kept is not None and kept[0] == cluster.snapshot_changes and isinstance(kept[1], ClusterReads):
                return kept[1]  # nothing changed since: the same reads, their indexes built once
        reads = cls(
            claims=tuple(cluster.list_claims()),
            nodes=tuple(cluster.list_nodes(summary=True)),
            gpu_nodes=tuple(cluster.list_gpu_nodes(summary=True)),
            node_classes=tuple(cluster.list_node_classes()) if node_classes else (),
            membership=cluster.membership if isinstance(cluster, InvocationCluster) else {},
        )
        if isinstance(cluster, InvocationCluster):
            cluster.memo[("reads", node_classes)] = (cluster.snapshot_changes, reads)
        return reads

    @cached_property
    def objects(self) -> ClusterObjects:
        """These reads as the core's membership cuts them (one index for every pool)."""
        return ClusterObjects(
            self.claims,
            self.nodes,
            self.gpu_nodes,
            self.pods,
            self.node_classes,
            pods_read_on=self.pods_read_on,
            earlier=self.membership,
        )

    @cached_property
    def cuts(self) -> dict[str, tuple[GPUPool, PoolSnapshot]]:
        """The pool snapshots cut from these reads so far, by pool name, with the pool object
        each was cut for (`snapshot_of` cuts a pool again only for another pool object)."""
        return {}

    def with_pods_on(self, pods: Pods, nodes: tuple[str, ...]) -> ClusterReads:
        """These reads with the TensorFusion pods of `nodes` read now (one field-selected list
        per node), in place of any read before."""
        wanted = set(nodes)
        kept = [p for p in self.pods if p.spec.node_name not in wanted]
        for node in nodes:
            kept.extend(p for p in pods.list_pods(node_name=node) if is_tensorfusion_pod(p))
        return replace(self, pods=tuple(kept), pods_read_on=self.pods_read_on | wanted)


def with_pods_of(snapshot: PoolSnapshot, reads: ClusterReads) -> PoolSnapshot:
    """`snapshot` (cut from reads that differ from `reads` only in their pods) with `reads`' pods
    on its nodes: no membership to cut again."""
    names = {n.name for n in snapshot.nodes}
    return snapshot.model_copy(
        update={
            "worker_pods": tuple(p for p in reads.pods if p.spec.node_name in names),
            "pods_read_on": reads.pods_read_on & names,
        }
    )


def snapshot_of(deps: Deps, pool: GPUPool, reads: ClusterReads) -> PoolSnapshot:
    """The pool's snapshot cut from one read (`planning.membership.pool_snapshot`); the same
    snapshot again for the same reads and pool object (what it worked out stays worked out)."""
    kept = reads.cuts.get(pool.name)
    if kept is not None and kept[0] is pool:
        return kept[1]
    if kept is not None and kept[0].spec == pool.spec:
        # The pool object changed (its status or annotations written) but not its spec: the same
        # members and node class, and what the snapshot worked out of them (its capacity) holds.
        snapshot = kept[1].model_copy(update={"pool": pool})
    else:
        snapshot = pool_snapshot(deps.settings.cluster_name, pool, reads.objects)
    reads.cuts[pool.name] = (pool, snapshot)
    return snapshot
