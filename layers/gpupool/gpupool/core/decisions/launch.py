"""plan_launch: close a Provisioned or Karpenter pool's capacity gap by recording claims, then launching them.

Role: from one pool snapshot, the priced offerings and `now`, decide (1) which Pending claims
still need their node (a previous invocation recorded the intent and died), and (2) which
new claims fill the gap `max(min − total, warm − available)` counting in-flight claims,
clipped at maxResources, with the cheapest offerings not remembered as out of capacity (a Karpenter
pool whose NodeClaims Karpenter's API server would refuse launches nothing and says why). Both
modes plan the same `LaunchInstance` actions (the service launches each through the Compute of
the claim's mode); they differ only in the class a claim records (a Provisioned pool's
GPUNodeClass, a Karpenter pool's karpenterNodeClassRef). What a failed launch means for the
claim and the offering — refused at once (`plan_launch_failure`) or given up on by Karpenter
later (`plan_lost_launches`, which `plan_launch` plans past first) — is the same in both modes:
the offering is remembered as unavailable for a while and the next cheapest is tried.

Must not: perform I/O, read the clock, make up names (suffixes are passed in), or re-implement
the gap math / selection (see `planning.capacity_plan`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from gpupool.core.decisions.karpenter_nodeclaim import (
    KarpenterModeError,
    nodeclaim_template,
    template_problems,
)
from gpupool.core.decisions.launch_budget import apply_budget, plan_budget_overrun, pool_warning
from gpupool.core.decisions.launch_failure import OFFERING_UNAVAILABLE_FOR, plan_lost_launches
from gpupool.core.model.base import GroupKindName, ObjectMeta
from gpupool.core.model.claim_state import LAUNCHED_MODES, claim_counts, claim_phase
from gpupool.core.model.constants import (
    API_GROUP,
    EVENT_MAX_RESOURCE_CONSTRAINT_REACHED,
    EVENT_NODE_LAUNCH_FAILED,
    FINALIZER,
    LABEL_CLUSTER,
    LABEL_MANAGED_BY,
    LABEL_NODE_CLASS,
    pool_label,
)
from gpupool.core.model.instance import LaunchTemplate
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimSpec, GPUNodeClaimStatus
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.capacity_plan import NO_ROOM, SELECTION_NOT_PROVEN, plan_capacity
from gpupool.core.planning.gap import MAX_RESOURCE_CONSTRAINT_REACHED
from gpupool.core.planning.offerings import claim_offering
from gpupool.core.planning.plan import (
    Action,
    CreateClaim,
    DeleteClaim,
    LaunchInstance,
    MarkOfferingUnavailable,
    OfferingRef,
    Plan,
)
from gpupool.core.planning.priced_offerings import describe_price, price_annotations
from gpupool.core.planning.requirements import RequirementError
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.planning.unavailable import (
    ANNOTATION_UNAVAILABLE_OFFERINGS,
    memory_text,
    remembering,
    unavailable_offerings,
)

__all__ = ["EVENT_NODE_LAUNCH_FAILED", "build_claim", "launch_template", "plan_launch"]


def _launch_class(snapshot: PoolSnapshot) -> tuple[str | None, str]:
    """(class name, "") when the pool can launch, else (None, the reason it cannot): a Provisioned
    pool's GPUNodeClass must exist; a Karpenter pool's karpenterNodeClassRef must be set and its
    NodeClaims must be ones Karpenter's API server accepts (the Karpenter Compute checks that the
    class it names exists)."""
    provisioner = snapshot.pool.spec.node_manager_config.node_provisioner
    if snapshot.pool.spec.node_manager_config.provisioning_mode == "Karpenter":
        ref = provisioner.karpenter_node_class_ref if provisioner else None
        if ref is None:
            return None, "Karpenter mode needs nodeProvisioner.karpenterNodeClassRef"
        problems = template_problems(nodeclaim_template(snapshot.pool))
        if problems:
            return None, "Karpenter's API server would refuse this pool's NodeClaims: " + "; ".join(problems)
        return ref.name, ""
    class_name = provisioner.node_class if provisioner else None
    if not class_name or snapshot.node_class is None:
        return None, f"GPUNodeClass {class_name or '(none set)'} not found"
    return class_name, ""


def launch_template(snapshot: PoolSnapshot) -> LaunchTemplate | None:
    """What the pool's nodes are launched with: its GPUNodeClass (Provisioned) or its NodeClaim
    template (Karpenter); None when it names none (`plan_launch` says why nothing launches)."""
    if snapshot.pool.spec.node_manager_config.provisioning_mode != "Karpenter":
        return snapshot.node_class
    try:
        return nodeclaim_template(snapshot.pool)
    except KarpenterModeError:
        return None


def _node_class_ref(snapshot: PoolSnapshot, node_class: str) -> GroupKindName:
    """The class a claim records: the pool's karpenterNodeClassRef (Karpenter), else its GPUNodeClass."""
    config = snapshot.pool.spec.node_manager_config
    ref = config.node_provisioner.karpenter_node_class_ref if config.node_provisioner else None
    if config.provisioning_mode == "Karpenter" and ref is not None:
        return GroupKindName(group=ref.group, kind=ref.kind, name=ref.name, version=ref.version)
    return GroupKindName(group=API_GROUP, kind="GPUNodeClass", name=node_class, version="v1")


def build_claim(snapshot: PoolSnapshot, offering: OfferingRef, *, name: str, node_class: str) -> GPUNodeClaim:
    """The GPUNodeClaim recording the intent to launch `offering` for the pool (TensorFusion's
    labels; `spec.nodeClassRef` is the class of the pool's mode, see `claim_state.claim_mode`)."""
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
            annotations=price_annotations(offering),
            finalizers=[FINALIZER],
            owner_references=owners,
        ),
        spec=GPUNodeClaimSpec(
            node_name=name,
            region=offering.region,
            zone=offering.zone,
            instance_type=offering.instance_type,
            node_class_ref=_node_class_ref(snapshot, node_class),
            capacity_type=offering.capacity_type,
            tflops_offered=offering.tflops,
            vram_offered=offering.vram,
            gpu_device_offered=offering.gpu_count,
        ),
        status=GPUNodeClaimStatus(phase="Pending"),
    )


def _resume_pending(
    snapshot: PoolSnapshot, node_class: str, *, skip: set[str]
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
        actions.append(
            LaunchInstance(pool=snapshot.name, claim=claim.name, node_class=node_class, offering=offering)
        )
        reasons.append(f"claim {claim.name} is Pending without an instance: launch or adopt it")
    return actions, reasons


def plan_launch(
    snapshot: PoolSnapshot,
    offerings: Sequence[OfferingRef],
    *,
    now: datetime,
    suffixes: Sequence[str],
    max_nodes: int = 100,
    unavailable_for: timedelta = OFFERING_UNAVAILABLE_FOR,
) -> Plan:
    """Claims to record and instances to launch so the pool's gap closes (see module docstring),
    after remembering the offerings of launches Karpenter gave up on (`plan_lost_launches`)."""
    pool = snapshot.pool
    mode = pool.spec.node_manager_config.provisioning_mode
    if mode not in LAUNCHED_MODES:
        return Plan(reasons=(f"pool {pool.name}: provisioningMode {mode} is not launched by gpupool yet",))
    lost = plan_lost_launches(snapshot, now=now, unavailable_for=unavailable_for)
    marks = [a for a in lost.actions if isinstance(a, MarkOfferingUnavailable)]
    if marks:  # plan past them, as the pool remembers them once they are applied
        snapshot = snapshot.model_copy(update={"pool": _remembering(pool, marks, now)})
    return lost + _plan_gap(snapshot, offerings, now=now, suffixes=suffixes, max_nodes=max_nodes)


def _remembering(pool: GPUPool, marks: Sequence[MarkOfferingUnavailable], now: datetime) -> GPUPool:
    """`pool` as it reads once `marks` are applied (their applier writes the same annotation)."""
    memory = unavailable_offerings(pool, now)
    for mark in marks:
        memory = remembering(memory, mark.offering_key, mark.until)
    annotations = {**pool.metadata.annotations, ANNOTATION_UNAVAILABLE_OFFERINGS: memory_text(memory)}
    return pool.model_copy(update={"metadata": pool.metadata.model_copy(update={"annotations": annotations})})


def _plan_gap(
    snapshot: PoolSnapshot,
    offerings: Sequence[OfferingRef],
    *,
    now: datetime,
    suffixes: Sequence[str],
    max_nodes: int,
) -> Plan:
    pool = snapshot.pool
    class_name, message = _launch_class(snapshot)  # Provisioned / Karpenter differ here
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
        claim = build_claim(snapshot, offering, name=name, node_class=class_name)
        actions.append(CreateClaim(pool=pool.name, claim=name, manifest=claim))
        actions.append(LaunchInstance(pool=pool.name, claim=name, node_class=class_name, offering=offering))
    count = len(chosen_offerings)
    chosen = ", ".join(f"{n}× {key}" for key, n in sorted(Counter(o.key for o in chosen_offerings).items()))
    reasons.append(f"pool {pool.name}: {gap_text} → {count} node(s): {chosen}")
    priced = {o.key: o for o in chosen_offerings}
    reasons.extend(f"price: {describe_price(o, now=now)}" for _, o in sorted(priced.items()))
    if gap.clipped or not capacity.covers_gap:
        message = f"{gap_text}: maxResources allows only {count} node(s)"
        actions.append(pool_warning(snapshot, EVENT_MAX_RESOURCE_CONSTRAINT_REACHED, message))
        reasons.extend(gap.reasons)
        if not capacity.covers_gap:
            reasons.append(f"{MAX_RESOURCE_CONSTRAINT_REACHED}: only {count} node(s) fit under maxResources")
    if not capacity.proven_optimal:
        reasons.append(SELECTION_NOT_PROVEN)
    return Plan(actions=tuple(actions), reasons=tuple(reasons))
