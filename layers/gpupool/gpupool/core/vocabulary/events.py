"""The relay's CloudEvents: each type, its data, its function, whether it coalesces.

Role: the one definition of every event the in-cluster relay sends the functions
(docs/events.md). A ``RelayEventType`` says its type (``ai.tensor-fusion.gpupool.<name>``), the
model of its ``data`` (required text fields are 1-253 characters; unknown fields are ignored on
read), the function that acts on it, whether the relay's batching window coalesces it (one
delivery per pool or cluster per window); the cause each becomes is intake's
(``gpupool.core.intake.relay.CAUSES``). The relay's translator
(``gpupool_incluster.relay.changes``) builds its events from these, intake
(``gpupool.core.intake.relay``) reads them back with the same models, so the two sides cannot
drift. Adding an event type is one ``RelayEventType`` here (listed in ``RELAY_EVENT_TYPES``),
its cause in ``intake.relay.CAUSES``, the relay rule that emits it and the service code that
acts on its cause.

Must not: know the transport (HTTP, CloudEvents modes) or the causes (intake reads events into
them: the vocabulary sits below intake), read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from gpupool.core.vocabulary.functions import FunctionName

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
    """One relay CloudEvent type (the cause it stands for: ``gpupool.core.intake.relay``)."""

    name: str
    data: type[Data]
    function: FunctionName
    coalesced: bool

    @property
    def type(self) -> str:
        """The CloudEvents ``type`` attribute: ``ai.tensor-fusion.gpupool.<name>``."""
        return TYPE_PREFIX + self.name


# A TensorFusion pod the scheduler marked Unschedulable (core.vocabulary.pods.is_unschedulable).
POD_UNSCHEDULABLE: Final = RelayEventType("pod.unschedulable", PodData, "launch", True)
# A GPUPool's spec or its tensor-fusion.ai annotations changed, or the pool was deleted.
POOL_CHANGED: Final = RelayEventType("pool.changed", PoolData, "launch", True)
# A TensorFusionCluster's spec.gpuPools changed, or the cluster was deleted.
CLUSTER_CHANGED: Final = RelayEventType("cluster.changed", ClusterData, "launch", True)
# A GPUPool's tensor-fusion.ai/manual-compaction annotation was set or changed.
POOL_MANUAL_COMPACTION: Final = RelayEventType(
    "pool.manual-compaction", ManualCompactionData, "compact", True
)
# A Node labelled tensor-fusion.ai/node-provisioner appeared, turned Ready, or went away.
NODE_JOINED: Final = RelayEventType("node.joined", NodeData, "bind", False)
NODE_READY: Final = RelayEventType("node.ready", NodeData, "bind", False)
NODE_DELETED: Final = RelayEventType("node.deleted", NodeData, "bind", False)
# A GPUNodeClaim (or a Karpenter NodeClaim gpupool manages) got a deletionTimestamp.
CLAIM_DELETED: Final = RelayEventType("claim.deleted", ClaimData, "bind", False)

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
