"""Termination: a deleting claim's node is drained and its instance terminated; Failed claims go.

Role: `terminate(claim, facts, now, policy)` — a deleting claim with a live instance: cordon its
registered node (when schedulable), drain it (the drain waits for the evicted pods), terminate
the instance, release the finalizer; without a live instance: release it. A Failed claim: its
live instance is terminated, and once Failed for the retention period (10 min) the claim is
deleted. Answers for every deleting or Failed claim (an empty step ends the claim's decision).

Must not: perform I/O or read the clock.
"""

from __future__ import annotations

from datetime import datetime

from gpupool.core.decisions.lifecycle.facts import ClaimFacts, LifecyclePolicy, Step, phase_since
from gpupool.core.decisions.lifecycle.registration import registered_node
from gpupool.core.model.claim_state import claim_phase
from gpupool.core.model.constants import LABEL_MANAGED_BY
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import (
    Action,
    CordonNode,
    DeleteClaim,
    DrainNode,
    ReleaseClaim,
    TerminateInstance,
)

__all__ = ["terminate"]


def _deleting(claim: GPUNodeClaim, facts: ClaimFacts) -> Step:
    pool, name = claim.metadata.labels.get(LABEL_MANAGED_BY), claim.name
    inst = facts.instance(claim)
    if inst is None or inst.gone:
        return [
            ReleaseClaim(pool=pool, claim=name)
        ], f"claim {name} deleted and has no live instance: release it"
    drain: list[Action] = []
    node = registered_node(claim, facts)
    if node is not None:  # its pods go first (the drain waits for them), then the instance
        if not node.spec.unschedulable:
            drain.append(CordonNode(pool=pool, claim=name, node=node.name))
        drain.append(DrainNode(pool=pool, claim=name, node=node.name))
    terminate_it = TerminateInstance(
        pool=pool, claim=name, instance_id=inst.instance_id, reason="ClaimDeleted"
    )
    what = f"{'drain its node, ' if drain else ''}terminate {inst.instance_id}"
    return [*drain, terminate_it, ReleaseClaim(pool=pool, claim=name)], f"claim {name} deleted: {what}"


def _failed(claim: GPUNodeClaim, facts: ClaimFacts, now: datetime, policy: LifecyclePolicy) -> Step:
    pool, name = claim.metadata.labels.get(LABEL_MANAGED_BY), claim.name
    inst = facts.instance(claim)
    if inst is not None and not inst.gone:
        terminate_it = TerminateInstance(
            pool=pool, claim=name, instance_id=inst.instance_id, reason="ClaimFailed"
        )
        return [terminate_it], f"claim {name} Failed: terminate its instance {inst.instance_id}"
    since = phase_since(claim)
    if since is not None and now - since >= policy.failed_claim_retention:
        return [
            DeleteClaim(pool=pool, claim=name, reason="FailedClaimExpired")
        ], f"claim {name} Failed long enough: delete"
    return [], ""


def terminate(claim: GPUNodeClaim, facts: ClaimFacts, now: datetime, policy: LifecyclePolicy) -> Step | None:
    if claim.metadata.deletion_timestamp is not None:
        return _deleting(claim, facts)
    if claim_phase(claim) == "Failed":
        return _failed(claim, facts, now, policy)
    return None
