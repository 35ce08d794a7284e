"""A claim as the status view shows it: phase, age, offering, price, node, and whether it is stuck.

Role: `claim_view` for a GPUNodeClaim (a Provisioned or Karpenter pool's unit of capacity) and
`nodeclaim_view` for a Karpenter NodeClaim gpupool made to expand an AutoSelect pool. A claim is
*stuck* when it stays in a phase past the time gpupool's own lifecycle gives it
(`decisions.lifecycle.facts.LifecyclePolicy`): Pending past the launch timeout, Creating past the
registration timeout, Failed past the retention, or deleting longer than `DELETION_STUCK` — the
functions would have moved it by then, so something (a function that does not run, a finalizer
nobody releases) is wrong. An expansion NodeClaim is stuck when not registered within the
registration timeout. A GPUNodeClaim marked interrupted keeps its phase; its reason says so.

Must not: perform I/O, read the clock (`now` is passed in) or decide anything.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from gpupool.core.decisions.autoselect_budget import expansion_hourly
from gpupool.core.decisions.lifecycle.facts import LifecyclePolicy, phase_since
from gpupool.core.model.claim_state import ANNOTATION_INTERRUPTED, claim_phase
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_ZONE,
)
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.priced_offerings import recorded_price_source
from gpupool.core.views.facts import ClaimView, duration_text

__all__ = ["DELETION_STUCK", "claim_view", "nodeclaim_phase", "nodeclaim_view", "seconds_since"]

# A finalizer gpupool holds is released within a few ticks; past this a deletion is stuck.
DELETION_STUCK = timedelta(minutes=15)


def seconds_since(moment: datetime | None, now: datetime) -> int | None:
    """Whole seconds from `moment` to `now` (0 when the clocks disagree); None without a moment."""
    if moment is None:
        return None
    return max(0, int((now - moment).total_seconds()))


def _minutes(span: timedelta) -> str:
    return duration_text(span.total_seconds())


def _price(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(Decimal(text))
    except InvalidOperation:
        return None


def _stuck_deleting(deleted: datetime | None, now: datetime) -> str | None:
    if deleted is None or now - deleted <= DELETION_STUCK:
        return None
    return f"deleting for {_minutes(now - deleted)}: a finalizer holds it past {_minutes(DELETION_STUCK)}"


def _claim_stuck(claim: GPUNodeClaim, phase: str, now: datetime, policy: LifecyclePolicy) -> str | None:
    deleting = _stuck_deleting(claim.metadata.deletion_timestamp, now)
    if deleting is not None or claim.metadata.deletion_timestamp is not None:
        return deleting
    created = claim.metadata.creation_timestamp
    age = now - created if created else timedelta(0)
    if phase == "Pending" and age > policy.launch_timeout:
        return f"Pending for {_minutes(age)}: past the {_minutes(policy.launch_timeout)} launch timeout"
    if phase == "Creating" and age > policy.registration_timeout:
        limit = _minutes(policy.registration_timeout)
        return f"Creating for {_minutes(age)}: past the {limit} registration timeout"
    since = phase_since(claim)
    if phase == "Failed" and since is not None and now - since > policy.failed_claim_retention:
        limit = _minutes(policy.failed_claim_retention)
        return f"Failed for {_minutes(now - since)}: kept past the {limit} retention"
    return None


def claim_view(claim: GPUNodeClaim, *, node: str | None, now: datetime, policy: LifecyclePolicy) -> ClaimView:
    """A GPUNodeClaim; `node` is the node that registered for it, if one did."""
    phase = "Deleting" if claim.metadata.deletion_timestamp is not None else claim_phase(claim)
    status = claim.status
    reason = status.reason if status else None
    interrupted = claim.metadata.annotations.get(ANNOTATION_INTERRUPTED)
    if interrupted:
        reason = f"interrupted: {interrupted}"
    spec = claim.spec
    return ClaimView(
        kind="GPUNodeClaim",
        name=claim.name,
        phase=phase,
        created=claim.metadata.creation_timestamp,
        age_seconds=seconds_since(claim.metadata.creation_timestamp, now),
        phase_seconds=seconds_since(phase_since(claim), now),
        instance_type=spec.instance_type,
        zone=spec.zone,
        capacity_type=spec.capacity_type,
        hourly_price=_price(claim.metadata.annotations.get(ANNOTATION_HOURLY_PRICING)),
        node=node,
        reason=reason,
        stuck=_claim_stuck(claim, phase, now, policy),
        price_source=recorded_price_source(claim.metadata.annotations, now),
    )


def _condition(nodeclaim: KarpenterNodeClaim, kind: str) -> str | None:
    return next((c.status for c in nodeclaim.status.conditions if c.type == kind), None)


def nodeclaim_phase(nodeclaim: KarpenterNodeClaim) -> str:
    """Deleting, Failed (`Launched=False`), else the furthest of Initialized / Registered / Launched
    that holds (Karpenter's lifecycle conditions), else Pending."""
    if nodeclaim.metadata.deletion_timestamp is not None:
        return "Deleting"
    if _condition(nodeclaim, "Launched") == "False":
        return "Failed"
    for kind in ("Initialized", "Registered", "Launched"):
        if _condition(nodeclaim, kind) == "True":
            return kind
    return "Pending"


def _requirement(nodeclaim: KarpenterNodeClaim, key: str) -> str | None:
    """What was launched (Karpenter's label on the NodeClaim), else what one `In` value asks for."""
    labelled = nodeclaim.metadata.labels.get(key)
    if labelled:
        return labelled
    for requirement in nodeclaim.spec.requirements:
        if requirement.key == key and requirement.operator == "In" and len(requirement.values) == 1:
            return requirement.values[0]
    return None


def nodeclaim_view(nodeclaim: KarpenterNodeClaim, *, now: datetime, policy: LifecyclePolicy) -> ClaimView:
    """An expansion NodeClaim of an AutoSelect pool."""
    phase = nodeclaim_phase(nodeclaim)
    created = nodeclaim.metadata.creation_timestamp
    stuck = _stuck_deleting(nodeclaim.metadata.deletion_timestamp, now)
    age = now - created if created else timedelta(0)
    if phase in ("Pending", "Launched") and age > policy.registration_timeout:
        stuck = (
            f"not registered after {_minutes(age)}: past the {_minutes(policy.registration_timeout)} timeout"
        )
    since = next(
        (c.last_transition_time for c in nodeclaim.status.conditions if c.type == phase),
        created,
    )
    failed = next(
        (c for c in nodeclaim.status.conditions if c.type == "Launched" and c.status == "False"), None
    )
    price = expansion_hourly(nodeclaim, ())
    return ClaimView(
        kind="NodeClaim",
        name=nodeclaim.name,
        phase=phase,
        created=created,
        age_seconds=seconds_since(created, now),
        phase_seconds=seconds_since(since, now),
        instance_type=_requirement(nodeclaim, KEY_INSTANCE_TYPE),
        zone=_requirement(nodeclaim, KEY_ZONE),
        capacity_type=_requirement(nodeclaim, KEY_CAPACITY_TYPE),
        hourly_price=float(price) if price is not None else None,
        node=nodeclaim.status.node_name,
        reason=(failed.reason or failed.message) if failed else None,
        stuck=stuck,
    )
