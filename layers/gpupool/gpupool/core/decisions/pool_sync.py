"""plan_pool_sync: the GPUPool objects a TensorFusionCluster's spec.gpuPools declares.

Role: TensorFusion materialises each `spec.gpuPools[]` entry as a GPUPool named
`<cluster>-<pool name>`, labelled `tensor-fusion.ai/cluster=<cluster>`, owned by the cluster,
with the entry's specTemplate as spec. Create the missing ones and bring drifted specs back
(labels and annotations others set are kept). Standalone GPUPools are left alone.

Must not: perform I/O or delete pools (removing a pool is a user's decision).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.constants import LABEL_CLUSTER
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import Action, ApplyPool, Plan

__all__ = ["cluster_pool_name", "plan_pool_sync"]


def cluster_pool_name(cluster: TensorFusionCluster, pool_name: str) -> str:
    return f"{cluster.name}-{pool_name}"


def plan_pool_sync(clusters: Sequence[TensorFusionCluster], pools: Sequence[GPUPool]) -> Plan:
    existing = {p.name: p for p in pools}
    actions: list[Action] = []
    reasons: list[str] = []
    for cluster in sorted(clusters, key=lambda c: c.name):
        for definition in cluster.spec.gpu_pools:
            name = cluster_pool_name(cluster, definition.name)
            current = existing.get(name)
            owners = cluster.controller_references()
            if current is None:
                desired = GPUPool(
                    metadata=ObjectMeta(
                        name=name, labels={LABEL_CLUSTER: cluster.name}, owner_references=owners
                    ),
                    spec=definition.spec_template,
                )
                actions.append(ApplyPool(pool=name, desired=desired, create=True))
                reasons.append(f"pool {name}: declared by TensorFusionCluster {cluster.name}: create")
                continue
            labels_ok = current.metadata.labels.get(LABEL_CLUSTER) == cluster.name
            if current.spec == definition.spec_template and labels_ok:
                continue
            desired = current.model_copy(
                update={
                    "spec": definition.spec_template,
                    "metadata": current.metadata.model_copy(
                        update={"labels": {**current.metadata.labels, LABEL_CLUSTER: cluster.name}}
                    ),
                }
            )
            actions.append(ApplyPool(pool=name, desired=desired, create=False))
            reasons.append(
                f"pool {name}: spec differs from TensorFusionCluster {cluster.name}'s gpuPools: update"
            )
    return Plan(actions=tuple(actions), reasons=tuple(reasons))
