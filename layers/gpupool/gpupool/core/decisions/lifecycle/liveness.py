"""Liveness: claims that will not become nodes fail, and their instance goes.

Role: `instance_lost` — the instance of a Creating or Bound claim is gone (terminated or on its
way): Failed. A Karpenter NodeClaim gone before its node was bound is told apart by when it went,
as Karpenter's controllers delete one (`pkg/controllers/nodeclaim/lifecycle/launch.go`,
`liveness.go`): within the launch timeout — InsufficientCapacity (Karpenter deletes at once a
NodeClaim its provider has no capacity for); after it — LaunchTimeout (Karpenter's 5-minute launch
TTL); after the registration timeout — RegistrationTimeout (its 15-minute registration TTL).
Only the first says anything about the offering (`launch_failure.plan_lost_launches`). A
NodeClaim gone after its claim was Bound (consolidation, interruption, by hand) stays
InstanceTerminated. `launch_timed_out` — a Pending claim older than the launch timeout (5 min):
Failed. `registration_timed_out` — a Creating claim older than the registration timeout (15
min) without a Ready node: Failed, its instance terminated. The next launch decision replaces
the capacity (Failed claims stop counting).

Must not: perform I/O or read the clock (`now` is passed in).
"""

from __future__ import annotations

from datetime import datetime

from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_name_of
from gpupool.core.decisions.lifecycle.facts import ClaimFacts, LifecyclePolicy, Step, age, fail_claim
from gpupool.core.model.claim_state import claim_phase
from gpupool.core.model.constants import LABEL_MANAGED_BY
from gpupool.core.model.nodeclaim import GPUNodeClaim

__all__ = ["instance_lost", "launch_timed_out", "registration_timed_out"]


def _failed(claim: GPUNodeClaim, facts: ClaimFacts, reason: str, msg: str) -> Step:
    pool = claim.metadata.labels.get(LABEL_MANAGED_BY)
    return fail_claim(claim, pool, facts.instance(claim), reason, msg), f"claim {claim.name}: {msg}: Failed"


def _karpenter_reason(claim: GPUNodeClaim, now: datetime, policy: LifecyclePolicy) -> tuple[str, str]:
    """Why Karpenter deleted an unbound claim's NodeClaim, read from how long it lived."""
    lived = age(claim, now)
    if lived >= policy.registration_timeout:
        return (
            "RegistrationTimeout",
            f"its node did not register within Karpenter's {policy.registration_timeout}",
        )
    if lived >= policy.launch_timeout:
        return "LaunchTimeout", f"it was not launched within Karpenter's {policy.launch_timeout}"
    return "InsufficientCapacity", "Karpenter deleted it before launching (no capacity for its offering)"


def instance_lost(
    claim: GPUNodeClaim, facts: ClaimFacts, now: datetime, policy: LifecyclePolicy
) -> Step | None:
    inst = facts.instance(claim)
    if inst is None or not inst.gone or claim_phase(claim) == "Pending":
        return None
    if nodeclaim_name_of(inst.instance_id) is not None and claim_phase(claim) != "Bound":
        reason, why = _karpenter_reason(claim, now, policy)
        return _failed(claim, facts, reason, f"NodeClaim {inst.instance_id} is {inst.state}: {why}")
    return _failed(claim, facts, "InstanceTerminated", f"instance {inst.instance_id} is {inst.state}")


def launch_timed_out(
    claim: GPUNodeClaim, facts: ClaimFacts, now: datetime, policy: LifecyclePolicy
) -> Step | None:
    if claim_phase(claim) != "Pending" or age(claim, now) <= policy.launch_timeout:
        return None
    msg = f"no instance running after the {policy.launch_timeout} launch timeout"
    return _failed(claim, facts, "LaunchTimeout", msg)


def registration_timed_out(
    claim: GPUNodeClaim, facts: ClaimFacts, now: datetime, policy: LifecyclePolicy
) -> Step | None:
    if claim_phase(claim) != "Creating" or age(claim, now) <= policy.registration_timeout:
        return None
    msg = f"no ready node with usable GPUs after the {policy.registration_timeout} registration timeout"
    return _failed(claim, facts, "RegistrationTimeout", msg)
