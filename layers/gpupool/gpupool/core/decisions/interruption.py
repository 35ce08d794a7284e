"""plan_interruption: the cloud is taking an instance away — as Karpenter handles it, then replace.

Role: for an interruption warning or an unexpected stop / termination of a claim's instance,
what Karpenter's interruption controller does (aws/karpenter-provider-aws
`pkg/controllers/interruption/`), in two plans (`Interruption`):
- `now`, applied first: on a Spot interruption warning (EC2) or a preemptible interruption
  (ECS), the claim's offering (instance type × zone × capacity type) marked unavailable for
  `unavailable_for` (3 min, Karpenter's `UnavailableOfferingsTTL`; the pool memory capacity
  errors use), so the replacement takes the next cheapest available one; the claim marked
  interrupted (it no longer counts as capacity, so the launch right after plans its
  replacement) with a `NodeInterrupted` Warning; its node cordoned; a Karpenter-mode claim's
  NodeClaim deleted (Karpenter's termination then drains the node and ends the instance);
- `drain`, applied after the replacement is launched (evictions can take a while; the new node
  should not wait for them): a Provisioned claim's node drained through the eviction API.
A rebalance recommendation is Karpenter's choice — an Event on the claim, no action — unless the
pool opts in (annotation `gpupool.io/rebalance-recommendation: replace`); then it is handled as
a Spot warning. An instance stopping or terminated on its own is handled the same way but marks
no offering (nothing says its capacity is short). A warning for an instance no live claim owns,
or for a claim already Failed or being deleted, changes nothing.

Must not: launch the replacement itself, perform I/O, or read the clock (`now` is passed in).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from gpupool.core.decisions.launch_failure import OFFERING_UNAVAILABLE_FOR
from gpupool.core.model.claim_state import claim_interrupted, claim_mode, claim_phase
from gpupool.core.model.constants import EVENT_NODE_INTERRUPTED, LABEL_MANAGED_BY
from gpupool.core.model.foreign import Node
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.offerings import claim_offering
from gpupool.core.planning.plan import (
    Action,
    CordonNode,
    DrainNode,
    MarkClaimInterrupted,
    MarkOfferingUnavailable,
    Plan,
    RecordEvent,
    TerminateInstance,
)

__all__ = [
    "ANNOTATION_REBALANCE",
    "CAPACITY_WARNINGS",
    "EVENT_NODE_INTERRUPTED",
    "EVENT_REBALANCE_RECOMMENDATION",
    "REBALANCE_REPLACE",
    "Interruption",
    "plan_interruption",
]

# gpupool's own pool annotation: "replace" treats rebalance recommendations as Spot warnings.
ANNOTATION_REBALANCE: Final = "gpupool.io/rebalance-recommendation"
REBALANCE_REPLACE: Final = "replace"
EVENT_REBALANCE_RECOMMENDATION: Final = "RebalanceRecommendation"
# Warnings that say the offering's capacity is being taken back.
CAPACITY_WARNINGS: Final = ("spot-interruption", "preemptible-interruption")
_REBALANCE = "rebalance-recommendation"


@dataclass(frozen=True)
class Interruption:
    """What to do now, and the drain to run once the replacement is on its way."""

    now: Plan
    drain: Plan


def _event(
    pool: str | None, claim: str, node: str | None, instance_id: str, kind: str, reason: str, text: str
) -> RecordEvent:
    return RecordEvent(
        pool=pool,
        claim=claim,
        node=node,
        instance_id=instance_id,
        object_kind="GPUNodeClaim",
        object_name=claim,
        event_type=kind,
        reason=reason,
        message=text,
    )


def _replaces_on_rebalance(pool: GPUPool | None) -> bool:
    return (
        pool is not None
        and pool.metadata.annotations.get(ANNOTATION_REBALANCE, "").strip().lower() == REBALANCE_REPLACE
    )


def plan_interruption(
    claim: GPUNodeClaim | None,
    node: Node | None,
    *,
    instance_id: str,
    reason: str,
    now: datetime,
    pool: GPUPool | None = None,
    unavailable_for: timedelta = OFFERING_UNAVAILABLE_FOR,
) -> Interruption:
    """What Karpenter would do for `reason` on `claim`'s instance (see module docstring)."""
    if claim is None:
        return Interruption(
            Plan(reasons=(f"instance {instance_id} ({reason}) belongs to no claim: nothing to do",)), Plan()
        )
    if claim.metadata.deletion_timestamp is not None:
        return Interruption(
            Plan(reasons=(f"claim {claim.name} is already being deleted: nothing to do for {reason}",)),
            Plan(),
        )
    if claim_phase(claim) == "Failed":
        return Interruption(
            Plan(
                reasons=(f"claim {claim.name} already Failed (its instance is being terminated): {reason}",)
            ),
            Plan(),
        )
    pool_name, name = claim.metadata.labels.get(LABEL_MANAGED_BY), claim.name
    node_name = node.name if node else None
    if reason == _REBALANCE and not _replaces_on_rebalance(pool):
        text = (
            f"instance {instance_id}: EC2 rebalance recommendation; no action, as Karpenter (annotate the "
            f"pool {ANNOTATION_REBALANCE}={REBALANCE_REPLACE} to replace such nodes early)"
        )
        event = _event(
            pool_name, name, node_name, instance_id, "Normal", EVENT_REBALANCE_RECOMMENDATION, text
        )
        return Interruption(Plan(actions=(event,), reasons=(f"claim {name}: {text}",)), Plan())
    actions: list[Action] = []
    offering = claim_offering(claim)
    if not claim_interrupted(claim):
        if reason in (*CAPACITY_WARNINGS, _REBALANCE) and offering is not None and pool_name:
            actions.append(
                MarkOfferingUnavailable(
                    pool=pool_name, offering_key=offering.key, until=now + unavailable_for
                )
            )
        actions.append(
            MarkClaimInterrupted(
                pool=pool_name, claim=name, node=node_name, instance_id=instance_id, reason=reason, at=now
            )
        )
        text = f"instance {instance_id}: {reason}; replacing it now and draining"
        actions.append(
            _event(pool_name, name, node_name, instance_id, "Warning", EVENT_NODE_INTERRUPTED, text)
        )
    if node is not None and not node.spec.unschedulable:
        actions.append(CordonNode(pool=pool_name, claim=name, node=node.name, instance_id=instance_id))
    drain: list[Action] = []
    recorded = claim.status.instance_id if claim.status else None
    if claim_mode(claim) == "Karpenter" and recorded:
        # Karpenter's way: delete the NodeClaim; its termination drains the node and ends the instance.
        actions.append(
            TerminateInstance(
                pool=pool_name, claim=name, instance_id=recorded, reason=f"{reason} (as Karpenter)"
            )
        )
    elif node is not None:
        drain.append(DrainNode(pool=pool_name, claim=name, node=node.name, instance_id=instance_id))
    where = f"node {node.name}" if node else "no node joined yet"
    what = (
        "mark its offering unavailable, "
        if any(isinstance(a, MarkOfferingUnavailable) for a in actions)
        else ""
    )
    return Interruption(
        Plan(
            actions=tuple(actions),
            reasons=(
                f"claim {name} ({where}): {reason} — {what}mark it, cordon; "
                "launch replaces it now, then drain",
            ),
        ),
        Plan(actions=tuple(drain)),
    )
