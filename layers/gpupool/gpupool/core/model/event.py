"""The envelope of a core v1 Event, as gpupool reads it back (the status view's decisions).

Role: the fields a reader of Events needs — the object it is about (`involvedObject`), type,
reason, message, how often it was seen (`count`) and when (`lastTimestamp`, else `eventTime`,
else `firstTimestamp`, else the object's creation: `last_seen`). Field names are core v1
Event's (k8s.io/api/core/v1 types.go); everything else is ignored on read.

Must not: write Events (the Cluster port's `record_event` does) or decide anything from them.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import Field

from gpupool.core.model.base import ForeignModel
from gpupool.core.model.foreign import ForeignObject

__all__ = ["Event", "EventSource", "InvolvedObject"]


class InvolvedObject(ForeignModel):
    """core v1 ObjectReference: what the Event is about."""

    api_version: str | None = None
    kind: str = ""
    name: str = ""
    namespace: str | None = None
    uid: str | None = None


class EventSource(ForeignModel):
    component: str | None = None
    host: str | None = None


class Event(ForeignObject):
    """core v1 Event."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Event"
    NAMESPACED: ClassVar[bool] = True

    api_version: Literal["v1"] = "v1"
    kind: Literal["Event"] = "Event"
    involved_object: InvolvedObject = Field(default_factory=InvolvedObject)
    reason: str = ""
    message: str = ""
    type: str = "Normal"
    count: int | None = None
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    event_time: datetime | None = None
    source: EventSource = Field(default_factory=EventSource)
    reporting_component: str | None = None

    def last_seen(self) -> datetime | None:
        """When it last happened: lastTimestamp, else eventTime, else firstTimestamp, else creation."""
        return (
            self.last_timestamp or self.event_time or self.first_timestamp or self.metadata.creation_timestamp
        )
