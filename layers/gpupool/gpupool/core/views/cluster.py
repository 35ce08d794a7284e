"""The whole status view: every pool (or one), and every GPU node, from one read of the cluster.

Role: `cluster_view(objects, now=…, pool=…)` — a `PoolView` per GPUPool (`views.pools`) and a
`NodeView` per node of those pools (`views.nodes`), each node with its pool, its claim (label
`tensor-fusion.ai/node-provisioner`) or the NodeClaim Karpenter made it for (`status.nodeName`),
its GPU objects and its TensorFusion workers. Without `pool`, GPU nodes in no pool (a GPUNode or
GPU object names them, or the label `nvidia.com/gpu.present=true`) are listed too, with no pool.
A node in two pools (labels that disagree) is shown under the first by name. `UnknownPool` when
`pool` names none.

Must not: perform I/O, read the clock (`now` is passed in) or decide anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from gpupool.core.decisions.lifecycle.facts import LifecyclePolicy
from gpupool.core.model.claim_state import node_claim
from gpupool.core.model.constants import COMPONENT_WORKER, INITIAL_GPU_NODE_LABEL, LABEL_COMPONENT
from gpupool.core.model.event import Event
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.views.facts import ClusterView, NodeView
from gpupool.core.views.nodes import gpu_node_name, node_view
from gpupool.core.views.pools import PoolObjects, pool_view

__all__ = ["ClusterRead", "UnknownPool", "cluster_view"]


class UnknownPool(LookupError):
    """The pool asked for does not exist; the message names the pools that do."""


@dataclass(frozen=True)
class ClusterRead:
    """One read of what the view is computed from (typed; unreadable objects already left out)."""

    pools: Sequence[GPUPool] = ()
    claims: Sequence[GPUNodeClaim] = ()
    nodes: Sequence[Node] = ()
    gpu_nodes: Sequence[GPUNode] = ()
    gpus: Sequence[GPU] = ()
    pods: Sequence[Pod] = ()  # TensorFusion pods (workers and those waiting)
    nodeclaims: Sequence[KarpenterNodeClaim] = ()
    events: Sequence[Event] = ()
    unreadable: Sequence[str] = ()


def _is_gpu_node(node: Node, gpu_nodes: set[str], gpu_hosts: set[str]) -> bool:
    return (
        node.name in gpu_nodes
        or node.name in gpu_hosts
        or node.metadata.labels.get(INITIAL_GPU_NODE_LABEL) == "true"
    )


def cluster_view(
    objects: ClusterRead,
    *,
    now: datetime,
    pool: str | None = None,
    policy: LifecyclePolicy | None = None,
) -> ClusterView:
    pools = sorted(objects.pools, key=lambda p: p.name)
    if pool is not None:
        pools = [p for p in pools if p.name == pool]
        if not pools:
            known = ", ".join(p.name for p in sorted(objects.pools, key=lambda p: p.name)) or "none"
            raise UnknownPool(f"no GPUPool named {pool!r} in this cluster (pools: {known})")
    inputs = PoolObjects(
        claims=objects.claims,
        nodes=objects.nodes,
        gpu_nodes=objects.gpu_nodes,
        pods=objects.pods,
        nodeclaims=objects.nodeclaims,
        events=objects.events,
    )
    views = [pool_view(p, inputs, now=now, policy=policy) for p in pools]
    owner: dict[str, str | None] = {}
    for view in views:
        for name in view.node_names:
            owner.setdefault(name, view.name)
    if pool is None:
        gpu_node_names = {g.name for g in objects.gpu_nodes}
        hosts = {host for g in objects.gpus if (host := gpu_node_name(g))}
        for node in objects.nodes:
            if node.name not in owner and _is_gpu_node(node, gpu_node_names, hosts):
                owner[node.name] = None
    return ClusterView(
        generated_at=now,
        pools=tuple(views),
        nodes=_nodes(objects, owner, now),
        unreadable=tuple(objects.unreadable),
    )


def _nodes(objects: ClusterRead, owner: dict[str, str | None], now: datetime) -> tuple[NodeView, ...]:
    gpu_nodes = {g.name: g for g in objects.gpu_nodes}
    claims = {c.name: c for c in objects.claims}
    made_for = {nc.status.node_name: nc for nc in objects.nodeclaims if nc.status.node_name}
    gpus: dict[str, list[GPU]] = {}
    for gpu in objects.gpus:
        host = gpu_node_name(gpu)
        if host:
            gpus.setdefault(host, []).append(gpu)
    workers: dict[str, int] = {}
    for pod in objects.pods:
        if pod.spec.node_name and pod.metadata.labels.get(LABEL_COMPONENT) == COMPONENT_WORKER:
            workers[pod.spec.node_name] = workers.get(pod.spec.node_name, 0) + 1
    shown: list[NodeView] = []
    for node in sorted(objects.nodes, key=lambda n: ((owner.get(n.name) or "\uffff"), n.name)):
        if node.name not in owner:
            continue
        claim_name = node_claim(node)
        shown.append(
            node_view(
                node,
                pool=owner[node.name],
                gpu_node=gpu_nodes.get(node.name),
                gpus=gpus.get(node.name, []),
                claim=claims.get(claim_name) if claim_name else None,
                nodeclaim=made_for.get(node.name),
                workers=workers.get(node.name, 0),
                now=now,
            )
        )
    return tuple(shown)
