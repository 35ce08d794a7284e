"""What the Cluster port's wide calls carry: one frozen object each, instead of a keyword list.

Role: `ObjectEvent` (the Event `Events.record_event` records), `ClaimMetadataPatch` (what
`Claims.patch_claim_metadata` sets) and `NodePatch` (what `Nodes.patch_node` sets), each
defined once and used by the callers and by every implementation of the port (the kube
adapter, the per-invocation cache, the in-memory double), so a field added here reaches them
all through the type checker. A None field means "leave it as it is"; in a label or annotation
mapping a None value removes that key (a JSON merge patch's null).

Must not: contain logic or import an SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["ClaimMetadataPatch", "EventType", "NodePatch", "ObjectEvent"]

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True, kw_only=True)
class ObjectEvent:
    """A core v1 Event about one object (`involvedObject` kind / name / namespace; None for a
    cluster-scoped object), its type, reason and message."""

    kind: str
    name: str
    namespace: str | None
    event_type: EventType
    reason: str
    message: str


@dataclass(frozen=True, kw_only=True)
class ClaimMetadataPatch:
    """Labels and annotations to set or remove (a None value removes the key) and the finalizer
    list to replace, guarded by the `resource_version` the claim was read with."""

    resource_version: str
    labels: Mapping[str, str | None] | None = None
    annotations: Mapping[str, str | None] | None = None
    finalizers: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class NodePatch:
    """Node labels and annotations to set or remove (a None value removes the key), and whether
    to cordon (`unschedulable=True`) or uncordon (False)."""

    labels: Mapping[str, str | None] | None = None
    annotations: Mapping[str, str | None] | None = None
    unschedulable: bool | None = None
