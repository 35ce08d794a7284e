"""Plans: what a decision wants done, as data (typed actions) plus the reasons a human reads.

Role: `Plan` and the `Action` union (discriminated on `kind`). Decisions in
`gpupool.core.decisions` return plans; only `gpupool.service.executor` applies them.
Every action declares exactly the objects it touches, among `TARGET_KEYS` (`pool`, `claim`,
`node`, `instance_id`): required where the action always has one (a `TerminateInstance` always
names its instance, a `DeleteClaim` its claim), optional where a decision may not know it (the
pool of a claim without its pool label), absent where it has none. `targets()` reads them, so
the executor logs them under fixed keys and skips later actions on a claim whose earlier action
failed.

Must not: perform or describe I/O details (clients, retries), read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import ConfigDict, Field

from gpupool.core.deferred_model import DeferredModel
from gpupool.core.model.base import Condition, Qty
from gpupool.core.model.capacity_type import CapacityType
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import ClaimPhase, GPUNodeClaim
from gpupool.core.model.pool import GPUPool, GPUPoolStatus
from gpupool.core.prevalidated import Prevalidated

__all__ = [
    "ACTION_TYPES",
    "TARGET_KEYS",
    "Action",
    "ApplyPool",
    "CordonNode",
    "CreateClaim",
    "CreateNodeClaim",
    "DeleteClaim",
    "DrainNode",
    "LabelNode",
    "LaunchInstance",
    "MarkClaimInterrupted",
    "MarkOfferingUnavailable",
    "OfferingRef",
    "PatchPoolStatus",
    "Plan",
    "RecordEvent",
    "ReleaseClaim",
    "RememberExpansions",
    "SetClaimPhase",
    "SetClusterCondition",
    "TerminateInstance",
]

CapacityTypeName = CapacityType  # TensorFusion's names (core.model.capacity_type)


class _Frozen(DeferredModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OfferingRef(_Frozen):
    """One offering to launch: instance type × zone × capacity type, with what it brings and costs.

    `key` identifies it in the unavailable-offerings memory.
    """

    instance_type: str = Field(min_length=1)
    region: str | None = None
    zone: str | None = None
    capacity_type: CapacityTypeName = "OnDemand"
    tflops: Qty
    vram: Qty
    gpu_count: int = Field(ge=0)
    hourly_price: str = Field(description="USD per hour, decimal text so it round-trips exactly")
    # The node labels an instance of this offering would carry (`requirements.offering_labels`),
    # so every gpuRequirements key can be judged; without them only type/zone/region/capacity type.
    # Left out of dumps: derived from the catalog, and they would drown the printed plan.
    labels: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)
    # Where `hourly_price` comes from ("live: <API> <time>" or "catalog: <source>") and when it
    # was read (None: the catalog, which is not read at a time). Left out of dumps as `labels`.
    price_source: str = Field(default="", repr=False, exclude=True)
    priced_at: datetime | None = Field(default=None, repr=False, exclude=True)

    @property
    def key(self) -> str:
        return f"{self.instance_type}/{self.zone or '*'}/{self.capacity_type}"


# The fixed structured-log keys an action's targets fill (the executor adds action and event_id).
TARGET_KEYS = ("pool", "claim", "node", "instance_id")


class _Action(_Frozen):
    """Base of every action. Each declares the targets it touches (fields named as in
    `TARGET_KEYS`, before its `kind` so printed plans keep their key order)."""

    def targets(self) -> dict[str, str]:
        """The targets this action declares and has, by their fixed log key."""
        return {
            key: value for key in TARGET_KEYS if isinstance(value := getattr(self, key, None), str) and value
        }

    def log_keys(self) -> dict[str, str]:
        """The fixed structured-log keys this action fills."""
        return {"action": str(getattr(self, "kind", "")), **self.targets()}


class ApplyPool(_Action):
    """Create a GPUPool from a TensorFusionCluster's gpuPools entry, or bring its spec in line."""

    pool: str
    kind: Literal["apply-pool"] = "apply-pool"
    desired: GPUPool
    create: bool


class CreateClaim(_Action):
    """Record the intent to launch one node (before any instance exists)."""

    pool: str
    claim: str
    kind: Literal["create-claim"] = "create-claim"
    manifest: GPUNodeClaim


class LaunchInstance(_Action):
    """Launch (or adopt) the node of a Pending claim through the Compute of the claim's mode (a
    cloud instance, or a Karpenter NodeClaim), then mark the claim Creating. `node_class` is the
    class the pool launches with (its GPUNodeClass, or its karpenterNodeClassRef's name);
    `offering` is what a failure marks unavailable."""

    pool: str
    claim: str
    kind: Literal["launch-instance"] = "launch-instance"
    node_class: str
    offering: OfferingRef


class SetClaimPhase(_Action):
    """Move a claim to `phase` with a reason (and the instance id when known; the node it bound)."""

    pool: str | None = None
    claim: str
    node: str | None = None
    instance_id: str | None = None
    kind: Literal["set-claim-phase"] = "set-claim-phase"
    phase: ClaimPhase
    reason: str
    message: str = ""


class TerminateInstance(_Action):
    """Terminate a claim's instance (or an orphan's: `claim` is then the missing claim its tag
    names); never an untagged one."""

    pool: str | None = None
    claim: str | None = None
    instance_id: str
    kind: Literal["terminate-instance"] = "terminate-instance"
    reason: str


class DeleteClaim(_Action):
    """Request a claim's deletion; its finalizer makes the instance go first."""

    pool: str | None = None
    claim: str
    node: str | None = None
    kind: Literal["delete-claim"] = "delete-claim"
    reason: str


class ReleaseClaim(_Action):
    """Remove gpupool's finalizer from a deleting claim whose instance is gone."""

    pool: str | None = None
    claim: str
    kind: Literal["release-claim"] = "release-claim"


class CordonNode(_Action):
    """Mark a node unschedulable (its claim and instance, when known, for the log); with
    `uncordon=True`, schedulable again (a consolidation whose drain was refused)."""

    pool: str | None = None
    claim: str | None = None
    node: str
    instance_id: str | None = None
    uncordon: bool | None = None  # None (left out of printed plans): cordon
    kind: Literal["cordon-node"] = "cordon-node"


class DrainNode(_Action):
    """Evict every pod on the node except DaemonSet and mirror pods, through the eviction API."""

    pool: str | None = None
    claim: str | None = None
    node: str
    instance_id: str | None = None
    kind: Literal["drain-node"] = "drain-node"


class LabelNode(_Action):
    """Set (value) or remove (None) node labels, and annotations."""

    pool: str | None = None
    claim: str | None = None
    node: str
    kind: Literal["label-node"] = "label-node"
    labels: dict[str, str | None]
    annotations: dict[str, str | None] = Field(default_factory=dict)


class MarkClaimInterrupted(_Action):
    """Annotate a claim as interrupted so capacity accounting stops counting it."""

    pool: str | None = None
    claim: str
    node: str | None = None
    instance_id: str | None = None
    kind: Literal["mark-claim-interrupted"] = "mark-claim-interrupted"
    reason: str
    at: datetime


class MarkOfferingUnavailable(_Action):
    """Remember in the pool (annotation) that an offering had no capacity, until `until`."""

    pool: str
    kind: Literal["mark-offering-unavailable"] = "mark-offering-unavailable"
    offering_key: str
    until: datetime


class PatchPoolStatus(_Action):
    """Set the named fields of the pool's status (others as they are on the fresh object)."""

    pool: str
    kind: Literal["patch-pool-status"] = "patch-pool-status"
    status: GPUPoolStatus
    fields: tuple[str, ...]


class CreateNodeClaim(_Action):
    """AutoSelect: create a Karpenter NodeClaim as given (no GPUNodeClaim owns it), copied from
    the GPU node `node` (its template)."""

    node: str
    kind: Literal["create-nodeclaim"] = "create-nodeclaim"
    manifest: KarpenterNodeClaim


class RememberExpansions(_Action):
    """AutoSelect: write the pool's memory of each pending pod's expansions (its annotation's
    whole value, `decisions.autoselect_memory`; empty removes it)."""

    pool: str
    kind: Literal["remember-expansions"] = "remember-expansions"
    expansions: str


class SetClusterCondition(_Action):
    """Set one condition of a TensorFusionCluster's status (replacing the one of its type)."""

    kind: Literal["set-cluster-condition"] = "set-cluster-condition"
    cluster_name: str
    condition: Condition


class RecordEvent(_Action):
    """A Kubernetes event about an object (the pool, claim, node and instance it concerns, when
    known, for the log)."""

    pool: str | None = None
    claim: str | None = None
    node: str | None = None
    instance_id: str | None = None
    kind: Literal["record-event"] = "record-event"
    object_kind: str
    object_name: str
    namespace: str | None = None
    event_type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str


Action = Annotated[
    ApplyPool
    | CreateClaim
    | LaunchInstance
    | SetClaimPhase
    | TerminateInstance
    | DeleteClaim
    | ReleaseClaim
    | CordonNode
    | DrainNode
    | LabelNode
    | MarkClaimInterrupted
    | MarkOfferingUnavailable
    | PatchPoolStatus
    | SetClusterCondition
    | CreateNodeClaim
    | RememberExpansions
    | RecordEvent,
    Field(discriminator="kind"),
]

# The action kinds of the `Action` union.
ACTION_TYPES: tuple[type[_Action], ...] = get_args(get_args(Action)[0])


class Plan(_Frozen):
    """Typed actions in the order they must be applied, and the reasons a human reads. Each action
    was validated when a decision made it: the plan checks their types (`Prevalidated`)."""

    actions: Annotated[tuple[Action, ...], Prevalidated(*ACTION_TYPES, what="actions")] = ()
    reasons: tuple[str, ...] = ()

    def __add__(self, other: Plan) -> Plan:
        return Plan(actions=self.actions + other.actions, reasons=self.reasons + other.reasons)

    @classmethod
    def join(cls, plans: Iterable[Plan]) -> Plan:
        result = cls()
        for plan in plans:
            result = result + plan
        return result

    @property
    def empty(self) -> bool:
        return not self.actions
