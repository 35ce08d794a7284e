"""What a failed launch means, in either mode: the claim fails, its offering is skipped a while.

Role: `plan_launch_failure` — a launch the Compute refused (Provisioned: RunInstances said
InsufficientInstanceCapacity or rejected the parameters; either mode: a missing node class):
the claim fails with the message, and a capacity error makes the offering unavailable for
`unavailable_for`, so the next round picks the next cheapest. `plan_lost_launches` — the same
failure found later: Karpenter reports a launch it could not make by deleting the NodeClaim
(InsufficientCapacity, NodeClassNotReady), which bind turns into the claim's
Failed/InsufficientCapacity (Karpenter's launch and registration timeouts are other reasons,
which mark nothing); its offering is
remembered the same way, from when the claim failed. `OFFERING_UNAVAILABLE_FOR` is how long
(DESIGN: a few minutes; the service's default setting).

Must not: perform I/O, read the clock, or plan the refill (`plan_launch` does, past these marks).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from gpupool.core.decisions.lifecycle.facts import phase_since
from gpupool.core.model.claim_state import claim_phase
from gpupool.core.model.constants import EVENT_NODE_LAUNCH_FAILED
from gpupool.core.planning.offerings import claim_offering
from gpupool.core.planning.plan import (
    Action,
    MarkOfferingUnavailable,
    OfferingRef,
    Plan,
    RecordEvent,
    SetClaimPhase,
)
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.planning.unavailable import unavailable_offerings

__all__ = ["OFFERING_UNAVAILABLE_FOR", "plan_launch_failure", "plan_lost_launches"]

OFFERING_UNAVAILABLE_FOR: Final = timedelta(minutes=3)


def plan_launch_failure(
    snapshot: PoolSnapshot,
    claim_name: str,
    offering: OfferingRef,
    *,
    capacity: bool,
    message: str,
    now: datetime,
    unavailable_for: timedelta,
) -> Plan:
    """A launch that failed: the claim fails with the message; a capacity error also makes the
    offering unavailable for `unavailable_for`, so the next round picks the next cheapest."""
    actions: list[Action] = []
    if capacity:
        actions.append(
            MarkOfferingUnavailable(
                pool=snapshot.name, offering_key=offering.key, until=now + unavailable_for
            )
        )
    reason = "InsufficientCapacity" if capacity else "LaunchFailed"
    actions.append(
        SetClaimPhase(pool=snapshot.name, claim=claim_name, phase="Failed", reason=reason, message=message)
    )
    if not capacity:
        actions.append(
            RecordEvent(
                pool=snapshot.name,
                claim=claim_name,
                object_kind="GPUNodeClaim",
                object_name=claim_name,
                event_type="Warning",
                reason=EVENT_NODE_LAUNCH_FAILED,
                message=message,
            )
        )
    what = "out of capacity" if capacity else "failed"
    return Plan(
        actions=tuple(actions), reasons=(f"claim {claim_name}: launch of {offering.key} {what}: {message}",)
    )


def plan_lost_launches(snapshot: PoolSnapshot, *, now: datetime, unavailable_for: timedelta) -> Plan:
    """Karpenter mode: the offerings of claims whose NodeClaim Karpenter gave up on before their
    node ever joined (Karpenter deletes a NodeClaim it cannot launch — InsufficientCapacity,
    NodeClassNotReady — and never writes Launched=False; bind then fails the claim with
    InsufficientCapacity when it went within the launch timeout; LaunchTimeout and
    RegistrationTimeout say nothing about the offering's capacity) — the same
    failure a Provisioned launch reports at once as CapacityUnavailable, found later — to
    remember as unavailable until `failed at + unavailable_for`. A Provisioned instance lost
    before its node joined is not one: its launch failures arrive as errors (`plan_launch_failure`)."""
    if snapshot.pool.spec.node_manager_config.provisioning_mode != "Karpenter":
        return Plan()
    remembered = unavailable_offerings(snapshot.pool, now)
    marks: dict[str, datetime] = {}
    for claim in snapshot.claims:
        status, offering = claim.status, claim_offering(claim)
        if status is None or claim_phase(claim) != "Failed" or status.reason != "InsufficientCapacity":
            continue
        if any(c.type == "Bound" for c in status.conditions) or offering is None:
            continue
        failed_at = phase_since(claim)
        if failed_at is None or failed_at + unavailable_for <= now:
            continue
        until = failed_at + unavailable_for
        if remembered.get(offering.key, now) < until and marks.get(offering.key, now) < until:
            marks[offering.key] = until
    actions = tuple(
        MarkOfferingUnavailable(pool=snapshot.name, offering_key=k, until=u) for k, u in sorted(marks.items())
    )
    reasons = tuple(
        f"pool {snapshot.name}: Karpenter could not launch {k}; skip it until {u.isoformat()}"
        for k, u in sorted(marks.items())
    )
    return Plan(actions=actions, reasons=reasons)
