"""Expansion reservations: a node AutoSelect made for a pod is that pod's for a short window.

Role: AutoSelect makes a NodeClaim for a pending pod (`core.vocabulary.expansions`: the
`gpupool.io/expansion-for` annotation on a NodeClaim labelled `tensor-fusion.ai/expansion-source`);
without a reservation, whichever pending pod kube-scheduler tries first once the node's GPUs are
reported takes them, and the pod the node was made for waits for yet another node. Karpenter's
provisioner nominates pods to the NodeClaims it makes for the same reason. Here, while the
reservation holds, a pod other than the one the node was made for passes the filter (and bind)
on that node only if the intended pod, still waiting, would still fit there after it (the
allocator's own fit, `Allocator.crowds_out`): several fractional pods may share the node, a pod
that would crowd the intended one out may not.

Fails open on time: a reservation holds from the node's NodeClaim to `PLACEMENT_GRACE` after
the node agent reported the node's GPUs — the moment AutoSelect itself stops counting on the
node for that pod — and not at all when that moment is unknown; it ends at once when the pod is
placed or gone, and protects nothing when the pod does not fit the node even alone. Fails
closed on forgery: only a NodeClaim makes a reservation (cluster-scoped; only Karpenter and
gpupool's functions may write it), never a pod's or a Node's annotations, and only for the
node its status names; a malformed annotation makes none.

Must not: read the clock (`now` is passed in), keep state, do I/O, or log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from gpupool.core.allocator.allocator import Allocator
from gpupool.core.allocator.request import GpuRequest
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.vocabulary.expansions import PLACEMENT_GRACE, expansion_made_for

__all__ = ["RESERVED", "Reservation", "holding", "reservation_of", "reserved_refusals"]

RESERVED = "reserved"  # the stage word a refusal's reason starts with (a metric label)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Node `node`, made by NodeClaim `nodeclaim` for pod `pod` (`<namespace>/<name>`)."""

    node: str
    nodeclaim: str
    pod: str


def reservation_of(nodeclaim: KarpenterNodeClaim) -> Reservation | None:
    """The reservation an expansion NodeClaim makes once its node is named; None for any other."""
    pod = expansion_made_for(nodeclaim)
    node = nodeclaim.status.node_name
    if pod is None or not node or not nodeclaim.name:
        return None
    return Reservation(node=node, nodeclaim=nodeclaim.name, pod=pod)


def holding(reported: datetime | None, *, now: datetime) -> bool:
    """Whether a reservation on a node whose GPUs were first reported at `reported` still holds
    at `now` (unknown: it does not — no GPU to take yet, or nothing to time the window by)."""
    return reported is not None and now - reported < PLACEMENT_GRACE


def reserved_refusals(
    allocator: Allocator,
    request: GpuRequest,
    nodes: Sequence[str],
    reservations: Mapping[str, tuple[Reservation, GpuRequest]],
) -> dict[str, str]:
    """The nodes among `nodes` that `request` may not take, with why: each holds a reservation
    (node → it and the waiting pod's request; the caller passes only those holding) for another
    pod that fits there now and would not after `request`."""
    refused: dict[str, str] = {}
    for node in nodes:
        held = reservations.get(node)
        if held is None:
            continue
        reservation, intended = held
        if intended.key == request.key or intended.key in allocator.state.allocations:
            continue
        if allocator.crowds_out(request, node, [intended]):
            refused[node] = (
                f"{RESERVED}: node {node} was made (NodeClaim {reservation.nodeclaim}) for pod "
                f"{reservation.pod}, which waits for it and would no longer fit after this pod"
            )
    return refused
