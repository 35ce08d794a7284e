"""A GPU node as the status view shows it: its GPUs' allocation, offering, price, age and flags.

Role: `node_view(node, …)` — each GPU object on the node (capacity, available, usable: phase
Running and not marked `gpu-missing-since`, read as the allocator reads it), or, when no GPU
object reports, the node's GPUs together from its GPUNode; the GPU model, instance type and
zone (the node's well-known labels), capacity type (the claim's, else Karpenter's label) and
hourly price (recorded on the claim or expansion NodeClaim, else the GPUNode's `costPerHour`).
Flags: `not-ready`, `cordoned`, `draining` (cordoned while its claim or NodeClaim goes, or
Karpenter's `karpenter.sh/disrupted` taint), `should-delete`, `do-not-disrupt` (gpupool's rule
`claim_state.do_not_disrupt`, or Karpenter's annotation), `interrupted`, `orphan` and
`gpu-unusable` (a GPU not usable, or a GPUNode that reports but is not Running).

Must not: perform I/O, read the clock (`now` is passed in) or decide anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation

from gpupool.core.allocator.build import gpu_phase
from gpupool.core.decisions.autoselect_budget import expansion_hourly
from gpupool.core.model.claim_state import claim_interrupted, do_not_disrupt
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_ZONE,
    LABEL_ORPHAN,
    LABEL_SHOULD_DELETE,
)
from gpupool.core.model.foreign import Node
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.priced_offerings import recorded_price_source
from gpupool.core.quantity import Quantity
from gpupool.core.views.claims import seconds_since
from gpupool.core.views.facts import GpuView, NodeView

__all__ = ["KARPENTER_DISRUPTED_TAINT", "gpu_node_name", "node_view"]

KARPENTER_DISRUPTED_TAINT = "karpenter.sh/disrupted"  # Karpenter's NoSchedule taint while it disrupts
_HOSTNAME = "kubernetes.io/hostname"


def gpu_node_name(gpu: GPU) -> str | None:
    """The node a GPU object is on: its status nodeSelector's hostname (as the allocator reads
    it), else its `kubernetes.io/hostname` label."""
    selector = gpu.status.node_selector if gpu.status else {}
    return (
        selector.get(_HOSTNAME) or next(iter(selector.values()), None) or gpu.metadata.labels.get(_HOSTNAME)
    )


def _number(value: Quantity | None) -> float:
    return float(value.value) if value is not None else 0.0


def _bytes(value: Quantity | None) -> int:
    return int(value.value) if value is not None else 0


def _gpu(gpu: GPU) -> GpuView:
    status = gpu.status
    capacity, available = (status.capacity, status.available) if status else (None, None)
    return GpuView(
        name=gpu.name,
        index=status.index if status else None,
        model=status.gpu_model if status else None,
        tflops_total=_number(capacity.tflops if capacity else None),
        tflops_available=_number(available.tflops if available else None),
        vram_total=_bytes(capacity.vram if capacity else None),
        vram_available=_bytes(available.vram if available else None),
        usable=gpu_phase(gpu) == "Running",
    )


def _gpus_of_node(gpu_node: GPUNode) -> tuple[GpuView, ...]:
    status = gpu_node.status
    if status is None or status.total_tflops is None:
        return ()
    model = status.node_info.gpu_model if status.node_info else None
    return (
        GpuView(
            name=f"{gpu_node.name} ({status.total_gpus or 0} GPU)",
            index=None,
            model=model,
            tflops_total=_number(status.total_tflops),
            tflops_available=_number(status.available_tflops),
            vram_total=_bytes(status.total_vram),
            vram_available=_bytes(status.available_vram),
            usable=status.phase == "Running",
        ),
    )


def _price(
    claim: GPUNodeClaim | None, nodeclaim: KarpenterNodeClaim | None, gpu_node: GPUNode | None
) -> float | None:
    candidates = [
        claim.metadata.annotations.get(ANNOTATION_HOURLY_PRICING) if claim else None,
        str(found) if nodeclaim and (found := expansion_hourly(nodeclaim, ())) is not None else None,
        gpu_node.spec.cost_per_hour if gpu_node else None,
    ]
    for text in candidates:
        if not text:
            continue
        try:
            return float(Decimal(text.strip().lstrip("$")))
        except InvalidOperation:
            continue
    return None


def _capacity_type(
    node: Node, claim: GPUNodeClaim | None, nodeclaim: KarpenterNodeClaim | None
) -> str | None:
    if claim is not None and claim.spec.capacity_type:
        return claim.spec.capacity_type
    if nodeclaim is not None and nodeclaim.metadata.labels.get(KEY_CAPACITY_TYPE):
        return nodeclaim.metadata.labels[KEY_CAPACITY_TYPE]
    return node.metadata.labels.get(KEY_CAPACITY_TYPE)


def _flags(
    node: Node,
    gpu_node: GPUNode | None,
    claim: GPUNodeClaim | None,
    nodeclaim: KarpenterNodeClaim | None,
    gpus: Sequence[GpuView],
) -> tuple[str, ...]:
    labels, annotations = node.metadata.labels, node.metadata.annotations
    gpu_labels = gpu_node.metadata.labels if gpu_node else {}
    going = (
        node.metadata.deletion_timestamp is not None
        or (claim is not None and (claim.metadata.deletion_timestamp is not None or claim_interrupted(claim)))
        or (nodeclaim is not None and nodeclaim.metadata.deletion_timestamp is not None)
    )
    disrupted = any(t.key == KARPENTER_DISRUPTED_TAINT for t in node.spec.taints)
    karpenter_protected = any(
        meta is not None and meta.annotations.get(ANNOTATION_KARPENTER_DO_NOT_DISRUPT, "").lower() == "true"
        for meta in (node.metadata, nodeclaim.metadata if nodeclaim else None)
    )
    flags = {
        "not-ready": not node.is_ready(),
        "cordoned": node.spec.unschedulable,
        "draining": (node.spec.unschedulable and going) or disrupted,
        "should-delete": "true" in (labels.get(LABEL_SHOULD_DELETE), gpu_labels.get(LABEL_SHOULD_DELETE)),
        "do-not-disrupt": do_not_disrupt(node, gpu_node) or karpenter_protected,
        "interrupted": claim is not None and claim_interrupted(claim),
        "orphan": labels.get(LABEL_ORPHAN) == "true" or annotations.get(LABEL_ORPHAN) == "true",
        "gpu-unusable": any(not g.usable for g in gpus),
    }
    return tuple(name for name, on in flags.items() if on)


def node_view(
    node: Node,
    *,
    pool: str | None,
    gpu_node: GPUNode | None,
    gpus: Sequence[GPU],
    claim: GPUNodeClaim | None,
    nodeclaim: KarpenterNodeClaim | None,
    workers: int,
    now: datetime,
) -> NodeView:
    """The node in `pool` (None: in none), with its GPU objects, claim or NodeClaim, and the
    number of TensorFusion workers on it."""
    shown = tuple(_gpu(g) for g in sorted(gpus, key=lambda g: (g.status.index if g.status else None) or 0))
    if not shown and gpu_node is not None:
        shown = _gpus_of_node(gpu_node)
    info = gpu_node.status.node_info if gpu_node and gpu_node.status else None
    model = next((g.model for g in shown if g.model), None) or (info.gpu_model if info else None)
    labels = node.metadata.labels
    return NodeView(
        name=node.name,
        pool=pool,
        claim=claim.name if claim else (nodeclaim.name if nodeclaim else None),
        ready=node.is_ready(),
        gpu_model=model,
        instance_type=labels.get(KEY_INSTANCE_TYPE),
        capacity_type=_capacity_type(node, claim, nodeclaim),
        zone=labels.get(KEY_ZONE),
        hourly_price=_price(claim, nodeclaim, gpu_node),
        created=node.metadata.creation_timestamp,
        age_seconds=seconds_since(node.metadata.creation_timestamp, now),
        workers=workers,
        gpus=shown,
        flags=_flags(node, gpu_node, claim, nodeclaim, shown),
        price_source=recorded_price_source(claim.metadata.annotations, now) if claim else None,
    )
