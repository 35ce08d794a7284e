"""Which claim, node and pool an interruption warning is about, read in one place.

Role: `find_interrupted(deps, instance_id)` — the live claim whose instance the cloud is taking
away, its node and its pool: a claim that recorded that instance id (Provisioned); else a
Karpenter-mode claim whose NodeClaim's `status.providerID` ends with it (the warning names the
EC2 / ECS instance, the claim records `nodeclaim/<name>`); else a claim with no instance yet whose
tags *and launch token* the instance carries (`decisions.instance_owner`: tags alone can be copied). A
Karpenter NodeClaim no GPUNodeClaim made (an AutoSelect expansion, a NodePool's own node) is
Karpenter's to handle (its interruption controller deletes it): `Interrupted.note` says so and
there is no claim. The launch function calls it for `InstanceInterruption`, applies
`plan_interruption`, launches the replacement right away and then drains.

Must not: decide anything, or write.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupool.core.decisions.instance_owner import claim_of_instance
from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_name_of
from gpupool.core.model.claim_state import node_claim
from gpupool.core.model.constants import LABEL_MANAGED_BY, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import Node
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.service.deps import Deps
from gpupool.service.errors import NotFound

__all__ = ["Interrupted", "find_interrupted"]


@dataclass(frozen=True)
class Interrupted:
    claim: GPUNodeClaim | None = None
    node: Node | None = None
    pool: GPUPool | None = None
    note: str | None = None  # why there is no claim to act on, when there is none


def _provider_instance(provider_id: str | None) -> str:
    return (provider_id or "").rsplit("/", 1)[-1]


def _claim_of(
    deps: Deps, instance_id: str, claims: list[GPUNodeClaim]
) -> tuple[GPUNodeClaim | None, str | None]:
    by_name = {c.name: c for c in claims}
    for claim in claims:
        if claim.status and claim.status.instance_id == instance_id:
            return claim, None
    if deps.karpenter is not None:
        for nodeclaim in deps.karpenter.list_nodeclaims(ours_only=False):
            if _provider_instance(nodeclaim.status.provider_id) != instance_id:
                continue
            owner = by_name.get(nodeclaim.metadata.labels.get(LABEL_NODE_PROVISIONER) or "")
            recorded = (owner.status.instance_id if owner and owner.status else None) or ""
            if owner is not None and nodeclaim_name_of(recorded) == nodeclaim.name:
                return owner, None
            return None, (
                f"instance {instance_id} is Karpenter NodeClaim {nodeclaim.name}'s, which no GPUNodeClaim "
                "made: left to Karpenter's own interruption handling"
            )
    # The cloud's tags name a claim only beside this claim's launch token (decisions.instance_owner).
    return claim_of_instance(instance_id, claims, deps.compute.describe([instance_id])), None


def find_interrupted(deps: Deps, instance_id: str) -> Interrupted:
    """The claim, node and pool behind `instance_id` (see the module docstring)."""
    claims = deps.cluster.list_claims()
    claim, note = _claim_of(deps, instance_id, claims)
    if claim is None:
        return Interrupted(note=note)
    node = next((n for n in deps.cluster.list_nodes() if node_claim(n) == claim.name), None)
    pool_name = claim.metadata.labels.get(LABEL_MANAGED_BY)
    try:
        pool = deps.cluster.get_pool(pool_name) if pool_name else None
    except NotFound:
        pool = None
    return Interrupted(claim=claim, node=node, pool=pool)
