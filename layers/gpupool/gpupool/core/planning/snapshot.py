"""The typed view a decision reads: one pool and everything that belongs to it, and its capacity.

Role: `PoolSnapshot`, the frozen record the service assembles from the `Cluster` port (the
pool, its node class, claims, nodes, GPUNodes and the TensorFusion pods on the nodes whose pods
were read, cut by `planning.membership`), `gpus_in_use` (a GPUNode reporting less available
than its total), and `pool_capacity` — what the pool has and has coming, the one accounting the
gap, the pool status and the gauges use. What a claim's record means (phase,
whether it counts, which node it owns) is the model's (`core.model.claim_state`).

Must not: load anything, read the clock, or decide; decisions live in `gpupool.core.decisions`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Annotated, Any

from pydantic import ConfigDict

from gpupool.core.deferred_model import DeferredModel
from gpupool.core.model.claim_state import claim_counts, node_claim
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode, GPUNodeStatus
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.prevalidated import Prevalidated
from gpupool.core.quantity import Quantity, sum_quantities

__all__ = ["PoolCapacity", "PoolSnapshot", "gpus_in_use", "pool_capacity"]

ZERO = Quantity(0)


class _Frozen(DeferredModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class PoolSnapshot(_Frozen):
    """One pool as read at one moment: its claims, nodes, GPUNodes and TensorFusion workers.

    `nodes` and `gpu_nodes` are the pool's (by claim label or GPUNode pool label);
    `worker_pods` are the TensorFusion pods (`core.vocabulary.pods.is_tensorfusion_pod`) on those
    nodes — on every one when `pods_read_on` is None, else on the nodes it names (the service reads
    pods node by node, only where a decision needs them; `pods_known` tells which).
    """

    cluster_name: str
    pool: GPUPool
    node_class: GPUNodeClass | None = None
    claims: Annotated[tuple[GPUNodeClaim, ...], Prevalidated(GPUNodeClaim)] = ()
    nodes: Annotated[tuple[Node, ...], Prevalidated(Node)] = ()
    gpu_nodes: Annotated[tuple[GPUNode, ...], Prevalidated(GPUNode)] = ()
    worker_pods: Annotated[tuple[Pod, ...], Prevalidated(Pod)] = ()
    pods_read_on: frozenset[str] | None = None

    @property
    def name(self) -> str:
        return self.pool.name

    @cached_property
    def lookups(self) -> dict[str, tuple[object, Any]]:
        """Indexes built on first use, so a decision looping over thousands of nodes does not
        scan every GPUNode and worker per node. Keyed by field; each remembers the tuple it
        indexed, so a copy with that field replaced builds its own (see `_index`)."""
        return {}

    def _index(self, field: str, key: Callable[[Any], str | None]) -> dict[str | None, Any]:
        source = getattr(self, field)
        built = self.lookups.get(field)
        if built is None or built[0] is not source:
            index: dict[str | None, Any] = {}
            for item in source:
                index.setdefault(key(item), []).append(item)
            built = (source, index)
            self.lookups[field] = built
        return built[1]

    def claim(self, name: str) -> GPUNodeClaim | None:
        found = self._index("claims", lambda c: c.name).get(name)
        return found[0] if found else None

    def node_of_claim(self, claim_name: str) -> Node | None:
        found = self._index("nodes", node_claim).get(claim_name)
        return found[0] if found else None

    def gpu_node(self, node_name: str) -> GPUNode | None:
        found = self.gpu_nodes_by_name().get(node_name)
        return found[0] if found else None

    def gpu_nodes_by_name(self) -> dict[str | None, list[GPUNode]]:
        """The GPUNodes by name, indexed once (what `gpu_node` answers from): a decision looping
        over a pool's thousands of nodes takes it once instead of asking per node."""
        return self._index("gpu_nodes", lambda g: g.name)

    def workers_on(self, node_name: str) -> tuple[Pod, ...]:
        return tuple(self._index("worker_pods", lambda p: p.spec.node_name).get(node_name, ()))

    def pods_known(self, node_name: str) -> bool:
        """Whether `worker_pods` holds this node's pods (they were read)."""
        return self.pods_read_on is None or node_name in self.pods_read_on

    def in_use(self, node_name: str) -> bool:
        """The node runs TensorFusion pods (as far as they were read) or its GPUNode reports
        some of its GPUs' capacity allocated."""
        return bool(self.workers_on(node_name)) or gpus_in_use(self.gpu_node(node_name))


def gpus_in_use(gpu_node: GPUNode | None) -> bool:
    """The GPUNode reports less TFLOPS or VRAM available than its total: some of it is allocated
    (TensorFusion's allocator and gpupool's lower `available*` as they place workers)."""
    status = gpu_node.status if gpu_node is not None else None
    if status is None:
        return False
    return any(
        total is not None and available is not None and available < total
        for total, available in (
            (status.total_tflops, status.available_tflops),
            (status.total_vram, status.available_vram),
        )
    )


# ---- capacity ----------------------------------------------------------------------------


class PoolCapacity(_Frozen):
    """What the pool has (reported by GPUNodes) and has coming (in-flight claims' offers)."""

    total_tflops: Quantity = ZERO
    total_vram: Quantity = ZERO
    available_tflops: Quantity = ZERO
    available_vram: Quantity = ZERO
    in_flight_tflops: Quantity = ZERO
    in_flight_vram: Quantity = ZERO
    nodes: int = 0
    ready_nodes: int = 0
    gpus: int = 0
    in_flight_claims: int = 0


def pool_capacity(snapshot: PoolSnapshot) -> PoolCapacity:
    """Capacity of the pool's counted nodes, and offered capacity of claims not yet reporting.

    A node whose claim no longer counts (deleting, Failed, interrupted) adds nothing: its
    capacity is going away and must be replaced. A counted claim whose node has not reported
    GPU capacity yet is in flight with what its spec offers (never lost on restart). Worked out
    once per snapshot (the gap, the status and the gauges all ask).
    """
    source = (snapshot.claims, snapshot.nodes, snapshot.gpu_nodes)
    kept = snapshot.lookups.get("capacity")
    if kept is not None:
        read_from: tuple[object, object, object] = kept[0]  # type: ignore[assignment]
        if all(a is b for a, b in zip(read_from, source, strict=True)):
            found: PoolCapacity = kept[1]
            return found
    capacity = _pool_capacity(snapshot)
    snapshot.lookups["capacity"] = (source, capacity)
    return capacity


def _pool_capacity(snapshot: PoolSnapshot) -> PoolCapacity:
    # One pass over the claims and one over the nodes (a pool's thousands of nodes, per read).
    known_claims: set[str] = set()
    counted_claims: set[str] = set()
    for claim in snapshot.claims:
        known_claims.add(claim.name)
        if claim_counts(claim):
            counted_claims.add(claim.name)
    gpu_nodes = snapshot.gpu_nodes_by_name()
    reported: list[GPUNodeStatus] = []
    nodes = ready = 0
    reporting_claims: set[str] = set()
    for node in snapshot.nodes:
        owner = node_claim(node)
        if owner in known_claims and owner not in counted_claims:
            continue
        nodes += 1
        ready += node.is_ready()
        named = gpu_nodes.get(node.name)
        status = named[0].status if named else None
        if status is None or status.total_tflops is None:
            continue
        reported.append(status)
        if owner:
            reporting_claims.add(owner)
    flying = [
        claim.spec
        for claim in snapshot.claims
        if claim.name in counted_claims and claim.name not in reporting_claims
    ]
    return PoolCapacity(
        total_tflops=sum_quantities([s.total_tflops or ZERO for s in reported]),
        total_vram=sum_quantities([s.total_vram or ZERO for s in reported]),
        available_tflops=sum_quantities([s.available_tflops or ZERO for s in reported]),
        available_vram=sum_quantities([s.available_vram or ZERO for s in reported]),
        in_flight_tflops=sum_quantities([spec.tflops_offered for spec in flying]),
        in_flight_vram=sum_quantities([spec.vram_offered for spec in flying]),
        nodes=nodes,
        ready_nodes=ready,
        gpus=sum([s.total_gpus or 0 for s in reported]),
        in_flight_claims=len(flying),
    )
