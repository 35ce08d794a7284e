"""The relay's CloudEvents: each type, its data, its function, whether it coalesces, its cause.

Role: the one definition of every event the in-cluster relay sends the functions
(docs/events.md). A ``RelayEventType`` says its type (``ai.tensor-fusion.gpupool.<name>``), the
model of its ``data`` (required text fields are 1-253 characters; unknown fields are ignored on
read), the function that acts on it, whether the relay's batching window coalesces it (one
delivery per pool or cluster per window) and the cause it becomes. The relay's translator
(``gpupool_incluster.relay.changes``) builds its events from these, intake
(``gpupool.core.intake.relay``) reads them back with the same models, so the two sides cannot
drift. Adding an event type is one ``RelayEventType`` here (listed in ``RELAY_EVENT_TYPES``),
plus the relay rule that emits it and the service code that acts on its cause.

Must not: know the transport (HTTP, CloudEvents modes), read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from gpupool.core.intake.causes import Cause, ClaimDeleted, Compact, NodeChange, NodeChanged, Reconcile
from gpupool.core.intake.routing import FunctionName

__all__ = [
    "CLAIM_DELETED",
    "CLUSTER_CHANGED",
    "NODE_DELETED",
    "NODE_JOINED",
    "NODE_READY",
    "POD_UNSCHEDULABLE",
    "POOL_CHANGED",
    "POOL_MANUAL_COMPACTION",
    "RELAY_EVENT_TYPES",
    "RELAY_TYPES",
    "TYPE_PREFIX",
    "ClaimData",
    "ClusterData",
    "ManualCompactionData",
    "NodeData",
    "PodData",
    "PoolData",
    "RelayData",
    "RelayEventType",
    "relay_event_named",
    "relay_event_of_type",
]

TYPE_PREFIX: Final = "ai.tensor-fusion.gpupool."

_Text = Annotated[str, Field(min_length=1, max_length=253)]


class RelayData(BaseModel):
    """An event's ``data``: foreign-shaped on read (unknown fields ignored), text fields only."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    def wire(self) -> dict[str, str]:
        """The ``data`` object as the relay sends it (wire names, absent fields left out)."""
        return {key: str(value) for key, value in self.model_dump(by_alias=True, exclude_none=True).items()}


class PodData(RelayData):
    namespace: _Text
    name: _Text
    pool: _Text | None = None


class PoolData(RelayData):
    pool: _Text


class ClusterData(RelayData):
    cluster: _Text


class NodeData(RelayData):
    node: _Text
    # The node's tensor-fusion.ai/node-provisioner label, when it has one.
    claim: _Text | None = None


class ClaimData(RelayData):
    claim: _Text


class ManualCompactionData(RelayData):
    pool: _Text
    # The annotation's RFC3339 value, kept as text for the logs; the service does not trust it.
    requested_at: str | None = Field(default=None, alias="requestedAt")


Data = TypeVar("Data", bound=RelayData)


@dataclass(frozen=True, slots=True)
class RelayEventType(Generic[Data]):
    """One relay CloudEvent type; ``becomes(data, name, event_id)`` is the cause it stands for."""

    name: str
    data: type[Data]
    function: FunctionName
    coalesced: bool
    becomes: Callable[[Data, str, str], Cause]

    @property
    def type(self) -> str:
        """The CloudEvents ``type`` attribute: ``ai.tensor-fusion.gpupool.<name>``."""
        return TYPE_PREFIX + self.name

    def cause(self, data: Mapping[str, object], *, event_id: str) -> Cause:
        """The cause an event of this type with ``data`` stands for; raises ValidationError."""
        return self.becomes(self.data.model_validate(data), self.name, event_id)


def _reconcile_pod(data: PodData, name: str, event_id: str) -> Cause:
    return Reconcile(pool=data.pool, trigger=name, event_id=event_id)


def _reconcile_pool(data: PoolData, name: str, event_id: str) -> Cause:
    return Reconcile(pool=data.pool, trigger=name, event_id=event_id)


def _reconcile_all(data: ClusterData, name: str, event_id: str) -> Cause:
    return Reconcile(pool=None, trigger=name, event_id=event_id)


def _compact_now(data: ManualCompactionData, name: str, event_id: str) -> Cause:
    return Compact(pool=data.pool, manual=True, event_id=event_id)


def _node_changed(change: NodeChange) -> Callable[[NodeData, str, str], Cause]:
    def becomes(data: NodeData, name: str, event_id: str) -> Cause:
        return NodeChanged(node=data.node, change=change, claim=data.claim, event_id=event_id)

    return becomes


def _claim_deleted(data: ClaimData, name: str, event_id: str) -> Cause:
    return ClaimDeleted(claim=data.claim, event_id=event_id)


# A TensorFusion pod the scheduler marked Unschedulable (core.vocabulary.pods.is_unschedulable).
POD_UNSCHEDULABLE: Final = RelayEventType("pod.unschedulable", PodData, "launch", True, _reconcile_pod)
# A GPUPool's spec or its tensor-fusion.ai annotations changed, or the pool was deleted.
POOL_CHANGED: Final = RelayEventType("pool.changed", PoolData, "launch", True, _reconcile_pool)
# A TensorFusionCluster's spec.gpuPools changed, or the cluster was deleted.
CLUSTER_CHANGED: Final = RelayEventType("cluster.changed", ClusterData, "launch", True, _reconcile_all)
# A GPUPool's tensor-fusion.ai/manual-compaction annotation was set or changed.
POOL_MANUAL_COMPACTION: Final = RelayEventType(
    "pool.manual-compaction", ManualCompactionData, "compact", True, _compact_now
)
# A Node labelled tensor-fusion.ai/node-provisioner appeared, turned Ready, or went away.
NODE_JOINED: Final = RelayEventType("node.joined", NodeData, "bind", False, _node_changed("joined"))
NODE_READY: Final = RelayEventType("node.ready", NodeData, "bind", False, _node_changed("ready"))
NODE_DELETED: Final = RelayEventType("node.deleted", NodeData, "bind", False, _node_changed("deleted"))
# A GPUNodeClaim (or a Karpenter NodeClaim gpupool manages) got a deletionTimestamp.
CLAIM_DELETED: Final = RelayEventType("claim.deleted", ClaimData, "bind", False, _claim_deleted)

RELAY_EVENT_TYPES: Final[tuple[RelayEventType[Any], ...]] = (
    POD_UNSCHEDULABLE,
    POOL_CHANGED,
    CLUSTER_CHANGED,
    POOL_MANUAL_COMPACTION,
    NODE_JOINED,
    NODE_READY,
    NODE_DELETED,
    CLAIM_DELETED,
)
# Every CloudEvents type the functions accept from the relay.
RELAY_TYPES: Final[tuple[str, ...]] = tuple(event_type.type for event_type in RELAY_EVENT_TYPES)
_BY_NAME: Final[Mapping[str, RelayEventType[Any]]] = {t.name: t for t in RELAY_EVENT_TYPES}
_BY_TYPE: Final[Mapping[str, RelayEventType[Any]]] = {t.type: t for t in RELAY_EVENT_TYPES}


def relay_event_named(name: str) -> RelayEventType[Any] | None:
    """The event type with this short name (``node.joined``); None when there is none."""
    return _BY_NAME.get(name)


def relay_event_of_type(cloudevent_type: str) -> RelayEventType[Any] | None:
    """The event type of a CloudEvents ``type`` (``TYPE_PREFIX`` + its name); None when unknown."""
    return _BY_TYPE.get(cloudevent_type)
