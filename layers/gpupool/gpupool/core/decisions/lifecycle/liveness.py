"""Liveness: claims that will not become nodes fail, and their instance goes.

Role: `instance_lost` — the instance of a Creating or Bound claim is gone (terminated or on its
way): Failed. `launch_timed_out` — a Pending claim older than the launch timeout (5 min):
Failed. `registration_timed_out` — a Creating claim older than the registration timeout (15
min) without a Ready node: Failed, its instance terminated. The next launch decision replaces
the capacity (Failed claims stop counting).

Must not: perform I/O or read the clock (`now` is passed in).
"""

from __future__ import annotations

from datetime import datetime

from gpupool.core.decisions.lifecycle.facts import ClaimFacts, LifecyclePolicy, Step, age, fail_claim
from gpupool.core.model.claim_state import claim_phase
from gpupool.core.model.constants import LABEL_MANAGED_BY
from gpupool.core.model.nodeclaim import GPUNodeClaim

__all__ = ["instance_lost", "launch_timed_out", "registration_timed_out"]


def _failed(claim: GPUNodeClaim, facts: ClaimFacts, reason: str, msg: str) -> Step:
    pool = claim.metadata.labels.get(LABEL_MANAGED_BY)
    return fail_claim(claim, pool, facts.instance(claim), reason, msg), f"claim {claim.name}: {msg}: Failed"


def instance_lost(claim: GPUNodeClaim, facts: ClaimFacts) -> Step | None:
    inst = facts.instance(claim)
    if inst is None or not inst.gone or claim_phase(claim) == "Pending":
        return None
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
