"""The few domain causes every trigger becomes.

Role: typed, frozen records of *why* a function was invoked — a schedule fired, an instance
changed state, a node joined, a claim was deleted, … — discriminated on ``kind``. Intake
(``gpupool.core.intake.aws`` / ``relay`` / ``alibaba``) turns each vendor envelope into exactly
one of these; the service decides from a fresh snapshot, the cause only says where to look.

Must not: parse vendor envelopes, hold raw dictionaries, read the clock, or log.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "INSTANCE_STATES",
    "Cause",
    "ClaimDeleted",
    "Compact",
    "Ignored",
    "InstanceInterruption",
    "InstanceState",
    "InstanceStateChanged",
    "InterruptionReason",
    "NodeChange",
    "NodeChanged",
    "Reconcile",
    "Sweep",
]

# EC2's instance-state names; Alibaba's ECS states are mapped onto them by intake.
InstanceState = Literal["pending", "running", "stopping", "stopped", "shutting-down", "terminated"]
INSTANCE_STATES: tuple[InstanceState, ...] = (
    "pending",
    "running",
    "stopping",
    "stopped",
    "shutting-down",
    "terminated",
)
InterruptionReason = Literal["spot-interruption", "rebalance-recommendation", "preemptible-interruption"]
NodeChange = Literal["joined", "ready", "deleted"]

# Kubernetes object names (and EC2 / ECS instance ids) are never empty.
_Name = Annotated[str, Field(min_length=1, max_length=253)]


class _Cause(BaseModel):
    """Our own data: immutable, unknown fields rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def log_keys(self) -> dict[str, str]:
        """The fixed structured-log keys this cause fills (pool, claim, node, instance_id, event_id)."""
        keys: dict[str, str] = {}
        for name in ("pool", "claim", "node", "instance_id", "event_id"):
            value = getattr(self, name, None)
            if isinstance(value, str) and value:
                keys[name] = value
        return keys


class Reconcile(_Cause):
    """Close every capacity gap of one pool (``pool``) or of every pool (``pool=None``)."""

    kind: Literal["reconcile"] = "reconcile"
    pool: _Name | None = None
    # What asked for it, for the logs: "schedule", "pod.unschedulable", "pool.changed", …
    trigger: _Name
    event_id: _Name


class InstanceStateChanged(_Cause):
    """A cloud instance moved to ``state``; bind looks up the claim that owns it by tag."""

    kind: Literal["instance-state-changed"] = "instance-state-changed"
    instance_id: _Name
    state: InstanceState
    event_id: _Name


class InstanceInterruption(_Cause):
    """The cloud will take ``instance_id`` away soon: cordon, drain, mark the claim, replace."""

    kind: Literal["instance-interruption"] = "instance-interruption"
    instance_id: _Name
    reason: InterruptionReason
    event_id: _Name


class NodeChanged(_Cause):
    """A Kubernetes node joined, became ready, or was deleted (relayed by the in-cluster relay).

    ``claim`` is the node's ``tensor-fusion.ai/node-provisioner`` label when the relay saw one;
    the service re-reads the node either way.
    """

    kind: Literal["node-changed"] = "node-changed"
    node: _Name
    change: NodeChange
    claim: _Name | None = None
    event_id: _Name


class ClaimDeleted(_Cause):
    """A GPUNodeClaim is being deleted: its instance must go, joined or not."""

    kind: Literal["claim-deleted"] = "claim-deleted"
    claim: _Name
    event_id: _Name


class Compact(_Cause):
    """Compact one pool or every pool; ``manual`` = the manual-compaction annotation asked for it now."""

    kind: Literal["compact"] = "compact"
    pool: _Name | None = None
    manual: bool = False
    event_id: _Name


class Sweep(_Cause):
    """Periodic bind sweep: launch / registration timeouts and orphaned tagged instances."""

    kind: Literal["sweep"] = "sweep"
    event_id: _Name


class Ignored(_Cause):
    """An event no function acts on, or one that could not be read; ``reason`` says which."""

    kind: Literal["ignored"] = "ignored"
    reason: str = Field(min_length=1)
    event_id: str | None = None


Cause = Annotated[
    Reconcile
    | InstanceStateChanged
    | InstanceInterruption
    | NodeChanged
    | ClaimDeleted
    | Compact
    | Sweep
    | Ignored,
    Field(discriminator="kind"),
]
