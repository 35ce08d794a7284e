"""plan_claim_lifecycle: move each GPUNodeClaim along Pending → Creating → Bound, or to Failed.

Role: from all claims, nodes and the managed instances the cloud reports, decide per claim by
asking the lifecycle stages (`decisions.lifecycle`, one module each, after Karpenter's NodeClaim
controllers) in this order of precedence, the first that answers deciding:
termination (a deleting claim: cordon and drain its node — the drain waits for its pods — then
terminate its instance and release its finalizer; a Failed claim: terminate its instance, delete
it after the retention period), initialization (its registered node — `tensor-fusion.ai/
node-provisioner=<claim>` — is Ready and its GPUNode
Running: Bound), liveness (its instance is gone; the launch timeout,
5 min), launch (an instance found by tag: Pending → Creating), liveness (the registration
timeout, 15 min). The gap left behind is refilled by the next launch decision (Failed and
deleting claims stop counting).

Must not: launch instances (only the launch decision does, under the pool's lease), perform
I/O, or read the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gpupool.core.decisions.lifecycle import adoption, initialization, liveness, termination
from gpupool.core.decisions.lifecycle.facts import (
    ClaimFacts,
    LifecyclePolicy,
    Step,
    phase_move_refusal,
    phase_since,
)
from gpupool.core.model.foreign import Node
from gpupool.core.model.instance import ManagedInstance
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import Action, Plan

__all__ = ["LifecyclePolicy", "phase_move_refusal", "phase_since", "plan_claim_lifecycle"]


def _decide(claim: GPUNodeClaim, facts: ClaimFacts, now: datetime, policy: LifecyclePolicy) -> Step:
    # The stages in order of precedence, the first that answers deciding (written out: asked of
    # every claim of the cluster, per invocation).
    answer = termination.terminate(claim, facts, now, policy)
    if answer is None:
        answer = initialization.initialize(claim, facts)
    if answer is None:
        answer = liveness.instance_lost(claim, facts, now, policy)
    if answer is None:
        answer = liveness.launch_timed_out(claim, facts, now, policy)
    if answer is None:
        answer = adoption.adopt(claim, facts)
    if answer is None:
        answer = liveness.registration_timed_out(claim, facts, now, policy)
    return answer if answer is not None else ([], "")


def plan_claim_lifecycle(
    claims: Sequence[GPUNodeClaim],
    nodes: Sequence[Node],
    instances: Sequence[ManagedInstance],
    *,
    gpu_nodes: Sequence[GPUNode],
    now: datetime,
    policy: LifecyclePolicy,
) -> Plan:
    """Lifecycle actions for every claim (see module docstring), in claim-name order."""
    facts = ClaimFacts(nodes, instances, gpu_nodes)
    actions: list[Action] = []
    reasons: list[str] = []
    for claim in sorted(claims, key=lambda c: c.name):
        claim_actions, reason = _decide(claim, facts, now, policy)
        actions.extend(claim_actions)
        if reason:
            reasons.append(reason)
    return Plan(actions=tuple(actions), reasons=tuple(reasons))
