"""AutoSelect expansion in the launch function: read pending pods and Karpenter's objects, plan, apply.

Role: `expand_autoselect(pool, deps, executor, outcome)` (called by the launch round of an
AutoSelect pool, under the pool's Lease). It reads the state itself — never the event that
triggered it — in one place (`autoselect_reads`): the pool's TensorFusion pods waiting for GPU
capacity (the API server picks the pods bound to no node in phase Pending — field selectors
`spec.nodeName=` and `status.phase=Pending`; `core.vocabulary.pods` confirms `is_unschedulable`
and `pool_of`), the Nodes that can be templates (labelled `nvidia.com/gpu.present=true`,
the label `plan_autoselect` takes templates by), every NodeClaim and NodePool, the GPU objects
(what a node like the template holds, to pack pods onto) — and applies
`plan_autoselect`, which draws candidates from and prices expansions with the catalog
(`deps.offerings`), against the pool's memories and budget. Without a Karpenter port it notes why
and does nothing.

Must not: decide itself, or create anything but through the executor.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupool.core.decisions.autoselect import DEFAULT_MAX_IN_FLIGHT, plan_autoselect
from gpupool.core.model.constants import INITIAL_GPU_NODE_LABEL
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.core.vocabulary.pods import is_unschedulable, pool_of
from gpupool.service.deps import Deps
from gpupool.service.executor import Executor
from gpupool.service.karpenter_ports import KarpenterApi
from gpupool.service.outcome import Outcome
from gpupool.service.results import record_results

__all__ = ["AutoSelectReads", "autoselect_reads", "expand_autoselect"]


@dataclass(frozen=True)
class AutoSelectReads:
    """What an AutoSelect expansion decides from."""

    pods: list[Pod]
    nodes: list[Node]
    nodeclaims: list[KarpenterNodeClaim]
    nodepools: list[KarpenterNodePool]
    gpus: list[GPU]


def autoselect_reads(pool: GPUPool, deps: Deps, karpenter: KarpenterApi) -> AutoSelectReads:
    """The pool's unschedulable TensorFusion pods, the template candidates, NodeClaims and NodePools."""
    waiting = deps.cluster.list_pods(node_name="", phase="Pending")
    return AutoSelectReads(
        pods=[p for p in waiting if is_unschedulable(p) and pool_of(p) == pool.name],
        nodes=deps.cluster.list_nodes(labels={INITIAL_GPU_NODE_LABEL: "true"}),
        nodeclaims=karpenter.list_nodeclaims(ours_only=False),
        nodepools=karpenter.list_nodepools(),
        gpus=deps.cluster.list_gpus(),
    )


def expand_autoselect(pool: GPUPool, deps: Deps, executor: Executor, outcome: Outcome) -> None:
    if deps.karpenter is None:
        outcome.note(f"pool {pool.name}: AutoSelect needs Karpenter's API; none is wired")
        return
    reads = autoselect_reads(pool, deps, deps.karpenter)
    if not reads.pods:
        outcome.note(f"pool {pool.name}: no unschedulable TensorFusion pod; nothing to expand")
    plan = plan_autoselect(
        reads.pods,
        reads.nodes,
        reads.nodeclaims,
        reads.nodepools,
        suffixes=[deps.new_suffix() for _ in range(min(len(reads.pods), DEFAULT_MAX_IN_FLIGHT))],
        now=deps.clock.now(),
        max_in_flight=DEFAULT_MAX_IN_FLIGHT,
        pool=pool,
        offerings=deps.offerings,
        unavailable_for=deps.settings.offering_unavailable_for,
        gpus=reads.gpus,
    )
    record_results(outcome, plan, executor.apply(plan))
