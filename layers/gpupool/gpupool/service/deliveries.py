"""Relay deliveries acted on once: a replayed delivery is acknowledged, not acted on again.

Role: a signed relay call stays valid for a while (the HMAC timestamp window, SigV4's and FC's
own date checks), so one captured from the wire could be sent again and acted on again. Each
delivery names its CloudEvent id; the record of the ids a function took lives in the cluster,
so it outlives the invocation (DESIGN §2: state lives in Kubernetes and cloud tags, not in a
process).
- ``DeliveryLedger`` is the port: one record per (function, event id), taken with a conditional
  write, so of two invocations racing for one id exactly one wins (implemented on
  ``coordination.k8s.io`` Leases by ``gpupool.adapters.kube.deliveries.KubeDeliveryLedger``;
  in memory by ``gpupool.testing.memory_ports.deliveries.MemoryDeliveryLedger``).
- ``DeliveryOnce`` is one invocation's use of it: ``begin()`` says ``first`` (act on it),
  ``done`` (a replay of a delivery already acted on: acknowledge, act on nothing) or
  ``in-progress`` (another invocation holds it now: answer "retry later"); ``finish()`` keeps the
  record for ``REPLAY_WINDOW``; ``abandon()`` drops it, so the sender's retry of a delivery that
  failed retryably is acted on. A record of an invocation that died mid-way expires after
  ``PROCESSING_HOLD`` and the next delivery of that id is acted on.

Must not: decide anything about the event, hold state in process memory (the record is the
state), or read the clock itself (``now`` comes from the deps' clock).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal, Protocol

__all__ = [
    "PROCESSING_HOLD",
    "REPLAY_WINDOW",
    "DeliveryLedger",
    "DeliveryOnce",
    "DeliveryState",
    "delivery_key",
]

DeliveryState = Literal["first", "done", "in-progress"]

# Longer than any window in which a captured delivery still authenticates: the HMAC timestamp
# (±5 min), SigV4 (Lambda refuses a signature older than 15 min) and FC's Date (±15 min).
REPLAY_WINDOW = timedelta(minutes=30)
# Longer than a function may run (Lambda 90 s, FC 120 s in template.yaml / s.yaml): a record
# still "in progress" after this is one whose invocation died.
PROCESSING_HOLD = timedelta(minutes=5)


class DeliveryLedger(Protocol):
    """Records of the relay deliveries taken, by key; every write is conditional."""

    def claim(self, key: str, *, holder: str, now: datetime, hold_for: timedelta) -> DeliveryState:
        """Take the record ``key`` for ``holder`` until ``now + hold_for``: ``first`` when taken
        (created, or taken over from an expired or dropped one), ``done`` when it is a finished
        one still kept, ``in-progress`` when another holder has it (or won a race for it).
        Raises a retryable DomainError when the store cannot be reached."""
        ...

    def complete(self, key: str, *, holder: str, now: datetime, keep_for: timedelta) -> None:
        """Mark ``holder``'s record finished and keep it until ``now + keep_for``; nothing when
        another holder has it. Raises a DomainError when the store cannot be reached."""
        ...

    def release(self, key: str, *, holder: str) -> None:
        """Drop ``holder``'s record (nothing when another holder has it, or it is gone)."""
        ...

    def prune(self, *, now: datetime) -> int:
        """Delete the records expired by ``now``; how many were deleted. Best effort."""
        ...


def delivery_key(function: str, event_id: str) -> str:
    """The record key of ``function``'s delivery ``event_id``: 40 hex digits (a name-safe digest,
    so an event id of any length or alphabet maps to one valid object name)."""
    return hashlib.sha256(f"{function}\x00{event_id}".encode()).hexdigest()[:40]


class DeliveryOnce:
    """One invocation's hold on the record of one delivery."""

    def __init__(
        self,
        ledger: DeliveryLedger,
        *,
        function: str,
        event_id: str,
        now: Callable[[], datetime],
        holder: str,
    ) -> None:
        if not event_id:
            raise ValueError("a delivery is known by its event id")
        self._ledger, self._now = ledger, now
        self.key = delivery_key(function, event_id)
        # One holder per invocation: two invocations on one Deps must not pass as one holder.
        self._holder = f"{holder}-{uuid.uuid4().hex[:8]}"
        self._held = False

    def begin(self) -> DeliveryState:
        state = self._ledger.claim(self.key, holder=self._holder, now=self._now(), hold_for=PROCESSING_HOLD)
        self._held = state == "first"
        return state

    def finish(self) -> None:
        """The delivery was acted on (or permanently refused): a replay is acknowledged from now on."""
        if self._held:
            self._held = False
            self._ledger.complete(self.key, holder=self._holder, now=self._now(), keep_for=REPLAY_WINDOW)

    def abandon(self) -> None:
        """The delivery failed retryably: drop the record so the sender's retry is acted on."""
        if self._held:
            self._held = False
            self._ledger.release(self.key, holder=self._holder)
