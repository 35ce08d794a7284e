"""plan_launch: close a Provisioned or Karpenter pool's capacity gap by recording claims, then launching them.

Role: from one pool snapshot, the priced offerings and `now`, decide (1) which Pending claims
still need their instance (a previous invocation recorded the intent and died), and (2) which
new claims fill the gap `max(min − total, warm − available)` counting in-flight claims,
clipped at maxResources, with the cheapest offerings not remembered as out of capacity.
Also `plan_launch_failure`: what a failed launch means for the claim and the offering.

Must not: perform I/O, read the clock, make up names (suffixes are passed in), or re-implement
the gap math / selection (see `planning.capacity_plan`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from gpupool.core.decisions.karpenter_launch import LAUNCHED_MODES, launch_action, launch_claim, launch_class
from gpupool.core.decisions.launch_budget import apply_budget, plan_budget_overrun, pool_warning
from gpupool.core.model.base import GroupKindName, ObjectMeta
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    API_GROUP,
    EVENT_MAX_RESOURCE_CONSTRAINT_REACHED,
    FINALIZER,
    LABEL_CLUSTER,
    LABEL_MANAGED_BY,
    LABEL_NODE_CLASS,
    pool_label,
)
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimSpec, GPUNodeClaimStatus
from gpupool.core.planning.capacity_plan import NO_ROOM, SELECTION_NOT_PROVEN, plan_capacity
from gpupool.core.planning.gap import MAX_RESOURCE_CONSTRAINT_REACHED
from gpupool.core.planning.plan import (
    Action,
    CreateClaim,
    DeleteClaim,
    MarkOfferingUnavailable,
    OfferingRef,
    Plan,
    RecordEvent,
    SetClaimPhase,
)
from gpupool.core.planning.requirements import RequirementError
from gpupool.core.planning.snapshot import (
    PoolSnapshot,
    claim_counts,
    claim_phase,
)

__all__ = [
    "EVENT_NODE_LAUNCH_FAILED",
    "build_claim",
    "claim_offering",
    "plan_launch",
    "plan_launch_failure",
]

EVENT_NODE_LAUNCH_FAILED = "NodeLaunchFailed"


def claim_offering(claim: GPUNodeClaim) -> OfferingRef | None:
    """The offering a claim was recorded for (None when its spec lacks an instance type)."""
    spec = claim.spec
    if not spec.instance_type:
        return None
    return OfferingRef(
        instance_type=spec.instance_type,
        region=spec.region,
        zone=spec.zone,
        capacity_type=spec.capacity_type or "OnDemand",
        tflops=spec.tflops_offered,
        vram=spec.vram_offered,
        gpu_count=spec.gpu_device_offered,
        hourly_price=claim.metadata.annotations.get(ANNOTATION_HOURLY_PRICING, "0"),
    )


def build_claim(snapshot: PoolSnapshot, offering: OfferingRef, *, name: str, node_class: str) -> GPUNodeClaim:
    """The GPUNodeClaim recording the intent to launch `offering` for the pool (TensorFusion's labels)."""
    pool = snapshot.pool
    owners = pool.controller_references()
    return GPUNodeClaim(
        metadata=ObjectMeta(
            name=name,
            labels={
                LABEL_MANAGED_BY: pool.name,
                LABEL_CLUSTER: snapshot.cluster_name,
                LABEL_NODE_CLASS: node_class,
                pool_label(pool.name): "true",
            },
            annotations={ANNOTATION_HOURLY_PRICING: offering.hourly_price},
            finalizers=[FINALIZER],
            owner_references=owners,
        ),
        spec=GPUNodeClaimSpec(
            node_name=name,
            region=offering.region,
            zone=offering.zone,
            instance_type=offering.instance_type,
            node_class_ref=GroupKindName(group=API_GROUP, kind="GPUNodeClass", name=node_class, version="v1"),
            capacity_type=offering.capacity_type,
            tflops_offered=offering.tflops,
            vram_offered=offering.vram,
            gpu_device_offered=offering.gpu_count,
        ),
        status=GPUNodeClaimStatus(phase="Pending"),
    )


def _resume_pending(
    snapshot: PoolSnapshot, node_class: str, *, skip: set[str | None]
) -> tuple[list[Action], list[str]]:
    actions: list[Action] = []
    reasons: list[str] = []
    for claim in snapshot.claims:
        if not claim_counts(claim) or claim_phase(claim) != "Pending" or claim.name in skip:
            continue
        if claim.status and claim.status.instance_id:
            continue
        offering = claim_offering(claim)
        if offering is None:
            continue
        actions.append(launch_action(snapshot, claim, offering, node_class))
        reasons.append(f"claim {claim.name} is Pending without an instance: launch or adopt it")
    return actions, reasons


def plan_launch(
    snapshot: PoolSnapshot,
    offerings: Sequence[OfferingRef],
    *,
    now: datetime,
    suffixes: Sequence[str],
    max_nodes: int = 100,
) -> Plan:
    """Claims to record and instances to launch so the pool's gap closes (see module docstring)."""
    pool = snapshot.pool
    mode = pool.spec.node_manager_config.provisioning_mode
    if mode not in LAUNCHED_MODES:
        return Plan(reasons=(f"pool {pool.name}: provisioningMode {mode} is not launched by gpupool yet",))
    class_name, message = launch_class(snapshot)  # Provisioned / Karpenter differ here
    if class_name is None:
        return Plan(
            actions=(pool_warning(snapshot, EVENT_NODE_LAUNCH_FAILED, message),),
            reasons=(f"pool {pool.name}: {message}",),
        )
    overrun = plan_budget_overrun(snapshot)  # already past the budget: alert (and terminate)
    ending = {a.claim for a in overrun.actions if isinstance(a, DeleteClaim)}
    actions, reasons = _resume_pending(snapshot, class_name, skip=ending)
    actions.extend(overrun.actions)
    reasons.extend(overrun.reasons)
    try:
        capacity = plan_capacity(snapshot, offerings, now=now, max_nodes=min(max_nodes, len(suffixes)))
    except RequirementError as error:
        message = f"gpuRequirements cannot be evaluated: {error}"
        actions.append(pool_warning(snapshot, EVENT_NODE_LAUNCH_FAILED, message))
        reasons.append(f"pool {pool.name}: {message}")
        return Plan(actions=tuple(actions), reasons=tuple(reasons))
    gap = capacity.gap
    gap_text = gap.describe()
    if gap.empty and not gap.clipped:
        reasons.append(f"pool {pool.name}: no capacity gap")
        return Plan(actions=tuple(actions), reasons=tuple(reasons))
    if gap.empty or gap.max_reached:
        message = NO_ROOM
        actions.append(pool_warning(snapshot, EVENT_MAX_RESOURCE_CONSTRAINT_REACHED, message))
        reasons.append(f"pool {pool.name}: {message}")
        return Plan(actions=tuple(actions), reasons=tuple(reasons))
    chosen_offerings = capacity.offerings
    if not chosen_offerings:
        if capacity.matching:
            message = f"{gap_text}: all {capacity.matching} matching offerings are out of capacity for now"
        else:
            message = f"{gap_text}: no priced offering matches the pool's gpuRequirements"
        actions.append(pool_warning(snapshot, EVENT_NODE_LAUNCH_FAILED, message))
        reasons.append(f"pool {pool.name}: {message}")
        return Plan(actions=tuple(actions), reasons=tuple(reasons))
    budgeted = apply_budget(snapshot, chosen_offerings)  # nodeProvisioner.budget (launch_budget.py)
    actions.extend(budgeted.actions)
    reasons.extend(budgeted.reasons)
    chosen_offerings = budgeted.offerings
    if not chosen_offerings:
        return Plan(actions=tuple(actions), reasons=tuple(reasons))
    for offering, suffix in zip(chosen_offerings, suffixes, strict=False):
        name = f"{pool.name}-{suffix}"
        claim = launch_claim(snapshot, build_claim(snapshot, offering, name=name, node_class=class_name))
        actions.append(CreateClaim(pool=pool.name, claim=name, manifest=claim))
        actions.append(launch_action(snapshot, claim, offering, class_name))
    count = len(chosen_offerings)
    chosen = ", ".join(f"{n}× {key}" for key, n in sorted(Counter(o.key for o in chosen_offerings).items()))
    reasons.append(f"pool {pool.name}: {gap_text} → {count} node(s): {chosen}")
    if gap.clipped or not capacity.covers_gap:
        message = f"{gap_text}: maxResources allows only {count} node(s)"
        actions.append(pool_warning(snapshot, EVENT_MAX_RESOURCE_CONSTRAINT_REACHED, message))
        reasons.extend(gap.reasons)
        if not capacity.covers_gap:
            reasons.append(f"{MAX_RESOURCE_CONSTRAINT_REACHED}: only {count} node(s) fit under maxResources")
    if not capacity.proven_optimal:
        reasons.append(SELECTION_NOT_PROVEN)
    return Plan(actions=tuple(actions), reasons=tuple(reasons))


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
