"""Which claim a cloud instance event is about: a claim trusts only its own instance.

Role: `launch_token(claim)` — the idempotency token gpupool sends with the claim's launch request
(EC2 and ECS `ClientToken`) — and `claim_of_instance(instance_id, claims, described)`, the one rule
the bind function (state changes) and the launch function (Spot warnings, preemptions) follow
before they mark, cordon and drain anything:

1. a claim that recorded this instance id (`status.instanceID`) is its claim;
2. a claim that recorded *another* instance id is never its claim, whatever the instance's tags
   say: tags can be copied onto any instance by whoever may run instances in the account;
3. a claim that has recorded no instance yet (the seconds between the launch call and the status
   write) is its claim only when the instance carries the claim's tags *and* was launched with
   this claim's launch token — the request that created it was gpupool's own for this claim. A
   cloud that does not report the token (ECS's DescribeInstances does not) never passes this step:
   the event is ignored, and the claim's lifecycle picks the instance up once its id is recorded.

Must not: call a cloud or the cluster (the caller passes what `Compute.describe` reported), or log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpupool.core.model.instance import ManagedInstance
from gpupool.core.model.nodeclaim import GPUNodeClaim

__all__ = ["claim_of_instance", "launch_token"]


def launch_token(claim: GPUNodeClaim) -> str:
    """The token sent with the claim's launch request: its UID (unique per object), else its name."""
    return claim.metadata.uid or claim.name


def _recorded(claim: GPUNodeClaim) -> str | None:
    return claim.status.instance_id if claim.status else None


def claim_of_instance(
    instance_id: str, claims: Sequence[GPUNodeClaim], described: Iterable[ManagedInstance]
) -> GPUNodeClaim | None:
    """The claim `instance_id` belongs to by the rules above, or None."""
    for claim in claims:
        if _recorded(claim) == instance_id:
            return claim
    for instance in described:
        if instance.instance_id != instance_id or not instance.claim_name or not instance.client_token:
            continue
        for claim in claims:
            if (
                claim.name == instance.claim_name
                and not _recorded(claim)
                and instance.client_token == launch_token(claim)
            ):
                return claim
    return None
