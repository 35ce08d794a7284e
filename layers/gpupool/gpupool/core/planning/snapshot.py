"""The typed view a decision reads: one pool, everything that belongs to it, and cloud facts.

Role: frozen records the service assembles from the `Cluster` and `Compute` ports
(`PoolSnapshot`, `ManagedInstance`), gpupool's own annotation names, and pure helpers that
answer the questions every decision asks: is a claim live, in flight, interrupted; which
node belongs to which claim; what capacity the pool has and has coming (`pool_capacity`).

Must not: load anything, read the clock, or decide; decisions live in `gpupool.core.decisions`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from functools import cached_property
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpupool.core.model.constants import LABEL_DO_NOT_DISRUPT, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.quantity import Quantity

__all__ = [
    "ANNOTATION_INTERRUPTED",
    "ANNOTATION_UNAVAILABLE_OFFERINGS",
    "InstanceLifecycle",
    "ManagedInstance",
    "PoolCapacity",
    "PoolSnapshot",
    "claim_counts",
    "claim_interrupted",
    "claim_phase",
    "do_not_disrupt",
    "node_claim",
    "pool_capacity",
    "unavailable_offerings",
]

# gpupool's own names (not TensorFusion's): kept on the objects so no state lives in memory.
ANNOTATION_UNAVAILABLE_OFFERINGS: Final = "gpupool.io/unavailable-offerings"  # on the pool: JSON
ANNOTATION_INTERRUPTED: Final = "gpupool.io/interrupted"  # on the claim: "<reason> <RFC3339>"

InstanceLifecycle = Literal["pending", "running", "stopping", "stopped", "shutting-down", "terminated"]
ZERO = Quantity(0)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class ManagedInstance(_Frozen):
    """A cloud instance as the `Compute` port reports it (only tagged instances are ever reported).

    `claim_name` comes from the `tensor-fusion.ai/node-name` tag, `cluster` from
    `tensor-fusion.ai/cluster`; `launch_time` is timezone-aware UTC.
    """

    instance_id: str = Field(min_length=1)
    state: InstanceLifecycle
    claim_name: str | None = None
    node_class: str | None = None
    cluster: str | None = None
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    launch_time: datetime | None = None
    tags: dict[str, str] = Field(default_factory=dict)

    @property
    def gone(self) -> bool:
        """True when the instance is terminated or on its way there."""
        return self.state in ("shutting-down", "terminated")


class PoolSnapshot(_Frozen):
    """One pool as read at one moment: its claims, nodes, GPUNodes and TensorFusion workers.

    `nodes` and `gpu_nodes` are the pool's (by claim label or GPUNode pool label);
    `worker_pods` are TensorFusion worker pods on those nodes.
    """

    cluster_name: str
    pool: GPUPool
    node_class: GPUNodeClass | None = None
    claims: tuple[GPUNodeClaim, ...] = ()
    nodes: tuple[Node, ...] = ()
    gpu_nodes: tuple[GPUNode, ...] = ()
    worker_pods: tuple[Pod, ...] = ()

    @property
    def name(self) -> str:
        return self.pool.name

    @cached_property
    def lookups(self) -> dict[str, tuple[object, dict[str | None, Any]]]:
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
        found = self._index("gpu_nodes", lambda g: g.name).get(node_name)
        return found[0] if found else None

    def workers_on(self, node_name: str) -> tuple[Pod, ...]:
        return tuple(self._index("worker_pods", lambda p: p.spec.node_name).get(node_name, ()))


# ---- claim and node facts ----------------------------------------------------------------


def claim_phase(claim: GPUNodeClaim) -> str:
    return claim.status.phase if claim.status else "Pending"


def claim_interrupted(claim: GPUNodeClaim) -> bool:
    return ANNOTATION_INTERRUPTED in claim.metadata.annotations


def claim_counts(claim: GPUNodeClaim) -> bool:
    """Whether the claim's capacity counts for the pool: not deleting, not Failed, not interrupted."""
    return (
        claim.metadata.deletion_timestamp is None
        and claim_phase(claim) != "Failed"
        and not claim_interrupted(claim)
    )


def node_claim(node: Node) -> str | None:
    """The claim a node was provisioned for (label `tensor-fusion.ai/node-provisioner`)."""
    return node.metadata.labels.get(LABEL_NODE_PROVISIONER)


def do_not_disrupt(node: Node, gpu_node: GPUNode | None) -> bool:
    """`tensor-fusion.ai/do-not-disrupt=true` as a label or annotation on the node or its GPUNode."""
    for meta in (node.metadata, gpu_node.metadata if gpu_node else None):
        if meta is None:
            continue
        for source in (meta.labels, meta.annotations):
            if source.get(LABEL_DO_NOT_DISRUPT, "").lower() == "true":
                return True
    return False


def unavailable_offerings(pool: GPUPool, now: datetime) -> dict[str, datetime]:
    """Offering keys the pool remembers as out of capacity, with their expiry, still in force at `now`.

    A malformed annotation is read as empty (it only ever delays a retry, never blocks one).
    """
    text = pool.metadata.annotations.get(ANNOTATION_UNAVAILABLE_OFFERINGS)
    if not text:
        return {}
    try:
        raw = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    result: dict[str, datetime] = {}
    for key, value in raw.items():
        try:
            until = datetime.fromisoformat(str(value))
        except ValueError:
            continue
        if until.tzinfo is not None and until > now:
            result[str(key)] = until
    return result


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


def _reported(gpu_node: GPUNode | None) -> bool:
    return bool(gpu_node and gpu_node.status and gpu_node.status.total_tflops is not None)


def pool_capacity(snapshot: PoolSnapshot) -> PoolCapacity:
    """Capacity of the pool's counted nodes, and offered capacity of claims not yet reporting.

    A node whose claim no longer counts (deleting, Failed, interrupted) adds nothing: its
    capacity is going away and must be replaced. A counted claim whose node has not reported
    GPU capacity yet is in flight with what its spec offers (never lost on restart).
    """
    counted_claims = {c.name for c in snapshot.claims if claim_counts(c)}
    known_claims = {c.name for c in snapshot.claims}
    total_t = total_v = avail_t = avail_v = ZERO
    nodes = ready = gpus = 0
    reporting_claims: set[str] = set()
    for node in snapshot.nodes:
        owner = node_claim(node)
        if owner in known_claims and owner not in counted_claims:
            continue
        gpu_node = snapshot.gpu_node(node.name)
        nodes += 1
        ready += node.is_ready()
        if not _reported(gpu_node) or gpu_node is None or gpu_node.status is None:
            continue
        status = gpu_node.status
        total_t += status.total_tflops or ZERO
        total_v += status.total_vram or ZERO
        avail_t += status.available_tflops or ZERO
        avail_v += status.available_vram or ZERO
        gpus += status.total_gpus or 0
        if owner:
            reporting_claims.add(owner)
    flight_t = flight_v = ZERO
    in_flight = 0
    for claim in snapshot.claims:
        if claim.name in counted_claims and claim.name not in reporting_claims:
            flight_t += claim.spec.tflops_offered
            flight_v += claim.spec.vram_offered
            in_flight += 1
    return PoolCapacity(
        total_tflops=total_t,
        total_vram=total_v,
        available_tflops=avail_t,
        available_vram=avail_v,
        in_flight_tflops=flight_t,
        in_flight_vram=flight_v,
        nodes=nodes,
        ready_nodes=ready,
        gpus=gpus,
        in_flight_claims=in_flight,
    )
