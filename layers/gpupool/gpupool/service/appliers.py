"""How each kind of action is applied through the ports (used only by the executor).

Role: one `apply_*` function per claim / node action kind (pool actions: `appliers_pool`;
DrainNode: `drain`; which applies which: `dispatch`), each returning a short detail for the log or
raising `Skip` when the object as it is now makes the action moot (already done, already
gone, or a stale phase change), or a domain error from the ports. Writes re-read the object and
carry its resourceVersion; a Conflict re-reads and retries a few times. Which phase moves are
allowed is the core's policy (`claim_lifecycle.phase_move_refusal`). A claim's node is launched,
adopted and terminated through the Compute of the claim's mode (`claim_state.claim_mode`,
`Deps.compute_for`), from what that mode launches with: the GPUNodeClass the decision named
(Provisioned) or the NodeClaim template of the claim's pool (Karpenter), both read fresh.

Must not: decide what to do (decisions are in `gpupool.core.decisions`), log, or check dry-run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

from gpupool.core.decisions.claim_lifecycle import phase_move_refusal
from gpupool.core.decisions.instance_owner import launch_token
from gpupool.core.decisions.karpenter_nodeclaim import KarpenterModeError, nodeclaim_template
from gpupool.core.model.base import Condition, TopLevel
from gpupool.core.model.claim_state import ANNOTATION_INTERRUPTED, LaunchedMode, claim_mode
from gpupool.core.model.constants import EVENT_INSTANCE_LAUNCHED, EVENT_INSTANCE_TERMINATED, FINALIZER
from gpupool.core.model.instance import LaunchTemplate
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.planning.plan import (
    CordonNode,
    CreateClaim,
    DeleteClaim,
    LabelNode,
    LaunchInstance,
    MarkClaimInterrupted,
    ReleaseClaim,
    SetClaimPhase,
    TerminateInstance,
)
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists, Conflict, DomainError, NotFound, PermanentError
from gpupool.service.ports import ClaimMetadataPatch, Claims, Events, NodePatch, Nodes, ObjectEvent

__all__ = ["Skip", "condition", "read_version", "retry_conflicts", "set_phase"]

_CONFLICT_RETRIES = 4
T = TypeVar("T")


class Skip(Exception):
    """The action no longer applies to the object as it is now (not an error)."""


def read_version(obj: TopLevel) -> str:
    """The resourceVersion a write of `obj` carries: the one it was read with. The Cluster port
    sets it on every read; an object without one is refused, since an empty version would make
    the write unconditional."""
    if not obj.metadata.resource_version:
        raise PermanentError(
            f"{obj.kind or obj.KIND} {obj.name} was read without a resourceVersion; not writing it"
        )
    return obj.metadata.resource_version


def retry_conflicts(write: Callable[[], T]) -> T:
    for _ in range(_CONFLICT_RETRIES - 1):
        try:
            return write()
        except Conflict as conflict:
            if isinstance(conflict, AlreadyExists):
                raise
    return write()


def apply_create_claim(deps: Deps, action: CreateClaim) -> str:
    created = deps.cluster.create_claim(action.manifest)
    if created.status is None or created.status.phase != "Pending" or not created.status.conditions:
        status = GPUNodeClaimStatus(phase="Pending", conditions=[condition(deps, "Pending", "ClaimCreated")])
        deps.cluster.update_claim_status(created.name, status, resource_version=read_version(created))
    return "claim recorded"


def condition(deps: Deps, phase: str, reason: str, message: str = "") -> Condition:
    return Condition(
        type=phase,
        status="True",
        reason=reason,
        message=message or None,
        last_transition_time=deps.clock.now(),
    )


def _launch_template(deps: Deps, action: LaunchInstance, mode: LaunchedMode) -> LaunchTemplate:
    """What the claim's node is launched with, read now (see module docstring)."""
    if mode == "Karpenter":
        try:
            return nodeclaim_template(deps.cluster.get_pool(action.pool))
        except KarpenterModeError as error:
            raise PermanentError(str(error)) from error
    node_class = next((c for c in deps.cluster.list_node_classes() if c.name == action.node_class), None)
    if node_class is None:
        raise PermanentError(f"GPUNodeClass {action.node_class} not found")
    return node_class


def apply_launch_instance(deps: Deps, action: LaunchInstance) -> str:
    name = action.claim
    claim = deps.cluster.get_claim(name)
    status = claim.status or GPUNodeClaimStatus()
    if claim.metadata.deletion_timestamp is not None or status.phase != "Pending" or status.instance_id:
        raise Skip(f"claim is {status.phase} with instance {status.instance_id}; nothing to launch")
    mode = claim_mode(claim)
    template = _launch_template(deps, action, mode)
    compute = deps.compute_for(mode)
    found = compute.find_by_claim(claim)
    if found is not None:
        instance_id, how = found.instance_id, "adopted"
    else:
        token = launch_token(claim)
        instance_id, how = (
            compute.launch(claim, template, action.offering, client_token=token),
            "launched",
        )
    set_phase(deps, name, "Creating", "InstanceLaunched", f"instance {instance_id} {how}", instance_id)
    offering = " ".join(
        part
        for part in (action.offering.instance_type, action.offering.zone, action.offering.capacity_type)
        if part
    )
    record_on_claim(deps.cluster, name, EVENT_INSTANCE_LAUNCHED, f"instance {instance_id} {how} ({offering})")
    return f"{how} {instance_id}"


def record_on_claim(events: Events, claim: str, reason: str, message: str) -> None:
    """A Normal Event on the GPUNodeClaim, so `kubectl describe` shows what was done to its
    instance; best effort, as every Event: a failure to record never fails the action."""
    with contextlib.suppress(DomainError):
        events.record_event(
            ObjectEvent(
                kind="GPUNodeClaim",
                name=claim,
                namespace=None,
                event_type="Normal",
                reason=reason,
                message=message,
            )
        )


def set_phase(
    deps: Deps, name: str, phase: str, reason: str, message: str, instance_id: str | None
) -> GPUNodeClaim:
    cluster = deps.cluster

    def write() -> GPUNodeClaim:
        claim = cluster.get_claim(name)
        current = claim.status or GPUNodeClaimStatus()
        if current.phase == phase and (instance_id is None or current.instance_id == instance_id):
            raise Skip(f"claim already {phase}")
        refusal = phase_move_refusal(current.phase, phase)
        if refusal is not None:
            raise Skip(refusal)
        conditions = [c for c in current.conditions if c.type != phase]
        conditions.append(condition(deps, phase, reason, message))
        status = current.model_copy(
            update={
                "phase": phase,
                "reason": reason,
                "message": message or None,
                "instance_id": instance_id or current.instance_id,
                "conditions": conditions,
            }
        )
        return cluster.update_claim_status(name, status, resource_version=read_version(claim))

    return retry_conflicts(write)


def apply_set_claim_phase(deps: Deps, action: SetClaimPhase) -> str:
    set_phase(deps, action.claim, action.phase, action.reason, action.message, action.instance_id)
    return f"{action.phase} ({action.reason})"


def apply_delete_claim(claims: Claims, action: DeleteClaim) -> str:
    try:
        claims.delete_claim(action.claim)
    except NotFound as gone:
        raise Skip("claim already gone") from gone
    return "deletion requested"


def apply_release_claim(claims: Claims, action: ReleaseClaim) -> str:
    name = action.claim

    def write() -> None:
        claim = claims.get_claim(name)
        if FINALIZER not in claim.metadata.finalizers:
            raise Skip("finalizer already removed")
        finalizers = tuple(f for f in claim.metadata.finalizers if f != FINALIZER)
        claims.patch_claim_metadata(
            name, ClaimMetadataPatch(finalizers=finalizers, resource_version=read_version(claim))
        )

    try:
        retry_conflicts(write)
    except NotFound as gone:
        raise Skip("claim already gone") from gone
    return "finalizer removed"


def apply_mark_interrupted(claims: Claims, action: MarkClaimInterrupted) -> str:
    name = action.claim

    def write() -> None:
        claim = claims.get_claim(name)
        value = f"{action.reason} {action.at.isoformat()}"
        claims.patch_claim_metadata(
            name,
            ClaimMetadataPatch(
                annotations={ANNOTATION_INTERRUPTED: value}, resource_version=read_version(claim)
            ),
        )

    retry_conflicts(write)
    return f"marked {action.reason}"


def _instance_mode(deps: Deps, claim_name: str | None) -> LaunchedMode:
    """The mode whose Compute holds the instance of claim `claim_name`. An instance whose claim
    is gone (an orphan) is the cloud's: a NodeClaim is owned by its GPUNodeClaim and goes with it."""
    if claim_name is None:
        return "Provisioned"
    try:
        return claim_mode(deps.cluster.get_claim(claim_name))
    except NotFound:
        return "Provisioned"


def apply_terminate(deps: Deps, action: TerminateInstance) -> str:
    deps.compute_for(_instance_mode(deps, action.claim)).terminate(action.instance_id)
    if action.claim is not None:
        record_on_claim(
            deps.cluster,
            action.claim,
            EVENT_INSTANCE_TERMINATED,
            f"instance {action.instance_id} terminated ({action.reason})",
        )
    return f"terminated ({action.reason})"


def apply_cordon(nodes: Nodes, action: CordonNode) -> str:
    try:
        nodes.patch_node(action.node, NodePatch(unschedulable=not action.uncordon))
    except NotFound as gone:
        raise Skip("node already gone") from gone
    return "uncordoned" if action.uncordon else "cordoned"


def apply_label(nodes: Nodes, action: LabelNode) -> str:
    """Label or annotate a node; moot once the node is gone (a node Karpenter or the cloud
    removed between the read and the write: its orphan or should-delete label has nothing left
    to mark)."""
    try:
        nodes.patch_node(action.node, NodePatch(labels=action.labels, annotations=action.annotations or None))
    except NotFound as gone:
        raise Skip("node already gone") from gone
    return "labelled"
