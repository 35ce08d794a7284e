"""Adoption: a Pending claim whose instance exists (found by its tag) moves to Creating.

Role: `adopt(claim, facts)` — the launch function records a claim (Pending) before it launches
the instance; when an invocation died between the two, or the write after the launch was lost,
the instance is found by its `tensor-fusion.ai/node-name` tag and adopted: SetClaimPhase
Creating with its id. (Launching itself is the launch function's, under the pool's Lease.)

Must not: launch anything (the launch function does), perform I/O or read the clock.
"""

from __future__ import annotations

from gpupool.core.decisions.lifecycle.facts import ClaimFacts, Step
from gpupool.core.model.claim_state import claim_phase
from gpupool.core.model.constants import LABEL_MANAGED_BY
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import SetClaimPhase

__all__ = ["adopt"]


def adopt(claim: GPUNodeClaim, facts: ClaimFacts) -> Step | None:
    inst = facts.instance(claim)
    if claim_phase(claim) != "Pending" or inst is None or inst.gone:
        return None
    adopted = SetClaimPhase(
        pool=claim.metadata.labels.get(LABEL_MANAGED_BY),
        claim=claim.name,
        instance_id=inst.instance_id,
        phase="Creating",
        reason="InstanceAdopted",
    )
    return [adopted], f"claim {claim.name}: instance {inst.instance_id} found by tag: Creating"
