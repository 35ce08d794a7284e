"""Registration: which node joined for a claim.

Role: a node registers for a claim by carrying `tensor-fusion.ai/node-provisioner=<claim>`
(set by the node class's bootstrap); `registered_node` answers it for the other stages
(initialization binds a Ready one, termination drains it). Nothing is written at registration:
the claim stays Creating until its node is Ready.

Must not: perform I/O or decide a phase.
"""

from __future__ import annotations

from gpupool.core.decisions.lifecycle.facts import ClaimFacts
from gpupool.core.model.foreign import Node
from gpupool.core.model.nodeclaim import GPUNodeClaim

__all__ = ["registered_node"]


def registered_node(claim: GPUNodeClaim, facts: ClaimFacts) -> Node | None:
    return facts.node_by_claim.get(claim.name)
