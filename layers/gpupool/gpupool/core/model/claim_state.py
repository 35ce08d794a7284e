"""What a GPUNodeClaim's record says: its phase, whether it counts, which mode makes its node.

Role: the claim semantics every decision (launch, lifecycle, compaction, budget, interruption)
and the service read, defined once: `claim_phase`, `claim_interrupted` (gpupool's annotation
`ANNOTATION_INTERRUPTED`), `claim_counts`, `node_claim` (which claim a node was provisioned
for), `do_not_disrupt`, and `claim_mode` — the provisioning mode whose `Compute` launched and
follows the claim's node. The pool's mode picks it when the claim is recorded (a Karpenter
pool's claims point `spec.nodeClassRef` at its karpenterNodeClassRef, a Provisioned pool's at
its GPUNodeClass), and the claim keeps it: a claim outlives a change of its pool's mode, or the
pool itself, and is still followed and terminated by the Compute that made its node.

Must not: decide anything (decisions do), read the clock, or hold names of TensorFusion's own
(`constants` does).
"""

from __future__ import annotations

from typing import Final, Literal

from gpupool.core.model.constants import API_GROUP, LABEL_DO_NOT_DISRUPT, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import Node
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool

__all__ = [
    "ANNOTATION_INTERRUPTED",
    "LAUNCHED_MODES",
    "LaunchedMode",
    "claim_counts",
    "claim_interrupted",
    "claim_mode",
    "claim_phase",
    "do_not_disrupt",
    "launched_mode",
    "node_claim",
]

# gpupool's own name (not TensorFusion's), kept on the claim so no state lives in memory.
ANNOTATION_INTERRUPTED: Final = "gpupool.io/interrupted"  # "<reason> <RFC3339>"

# The provisioning modes whose nodes gpupool launches for claims (AutoSelect expands per pod).
LaunchedMode = Literal["Provisioned", "Karpenter"]
LAUNCHED_MODES: Final[tuple[LaunchedMode, ...]] = ("Provisioned", "Karpenter")


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


def launched_mode(pool: GPUPool) -> LaunchedMode | None:
    """The pool's mode when gpupool launches its nodes for claims; None for AutoSelect."""
    mode = pool.spec.node_manager_config.provisioning_mode
    return None if mode == "AutoSelect" else mode


def claim_mode(claim: GPUNodeClaim) -> LaunchedMode:
    """The mode whose Compute makes and follows the claim's node: Provisioned when its
    `spec.nodeClassRef` is a GPUNodeClass (or unset, as on claims gpupool did not make),
    Karpenter when it names another kind (the pool's karpenterNodeClassRef, e.g. EC2NodeClass)."""
    ref = claim.spec.node_class_ref
    if ref is None or (ref.group == API_GROUP and ref.kind == GPUNodeClass.KIND):
        return "Provisioned"
    return "Karpenter"


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
