"""At-least-once delivery of relay events to one function's URL, that never gives up silently.

Role: `DeliveryLane` holds the events for one function and one sender thread that POSTs each as a
structured CloudEvent, signed by the configured `Signer`. An event is *fresh* until its first
attempt (a bounded queue: full → the oldest fresh event is dropped, reason `queue-full`), then
*retrying* until it is delivered or given up:
- a 2xx is delivered;
- 5xx, 429, 408, 425, 404, connection errors, and 401 / 403 are retried. 401 / 403 mean clock
  skew, a rotated secret or a missing permission — retrying lets the fix land, and every attempt
  is counted in `gpupool_relay_delivery_failures_total{reason="401"|"403"}`, which the chart's
  `RelayDeliveryUnauthorized` alert fires on;
- any other 4xx (400: the function cannot read it) cannot get better: dead-lettered at once,
  reason `rejected`;
- an event that failed `max_attempts` (20) times is dead-lettered, reason `attempts`.
Dead letters are counted in `gpupool_relay_events_dropped_total{reason}` (the chart's
`RelayEventsDeadLettered` alert), logged once (type, id, attempts, last answer; never the body),
and the newest `dead_letter_limit` are kept for inspection (`dead_letters()`).
One stuck event does not block its lane: a failed event waits for its own back-off (capped
exponential in its attempts, full jitter, at least what `retry-after` asked) while the lane goes on
with other events; after a failure the lane pauses by the lane's own back-off (exponential in its
consecutive failures, reset by any success, `retry-after` honoured) before its next attempt,
trying a different event first when there is one, so a function that is down is asked no more
often than before and a poisoned event costs others one short pause per attempt. While
`retry_limit` events are retrying, no fresh event is taken (memory stays bounded). One lane per
function, so a function that is down does not hold the others back.

Must not: decide which events exist (`changes`) or when they leave (`batching`); log bodies or
headers (they carry signatures).
"""

from __future__ import annotations

import collections
import datetime as dt
import heapq
import itertools
import json
import logging
import random
import threading
import time
from dataclasses import dataclass, field

import httpx

from gpupool_incluster.relay.changes import RelayEvent
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import Signer

__all__ = ["RETRIED_STATUSES", "DeadLetter", "DeliveryLane", "DeliverySettings"]

log = logging.getLogger("gpupool.relay.forward")
CONTENT_TYPE = "application/cloudevents+json"
RETRIED_STATUSES = frozenset({401, 403, 404, 408, 425, 429})
"""4xx answers retried (every 5xx is too): auth that a fix may restore, a URL not deployed yet,
timeouts and throttling."""


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    queue_limit: int = 10_000
    first_backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0
    timeout: float = 15.0
    max_attempts: int = 20
    """Attempts per event before it is dead-lettered: with the default back-off an event outlasts
    at least 3.7 minutes of an unreachable function (5.6 on average: the waits between its attempts
    are uniform in [cap/2, cap], caps 1, 2, 4, 8, 16, then 30 s)."""
    retry_limit: int = 1_000
    dead_letter_limit: int = 1_000
    source: str = "/gpupool/relay/cluster"

    def __post_init__(self) -> None:
        if self.queue_limit < 1:
            raise ValueError("the delivery queue needs room for at least one event")
        if not 0 < self.first_backoff <= self.max_backoff:
            raise ValueError("back-off needs 0 < first <= max")
        if self.max_attempts < 1 or self.retry_limit < 1 or self.dead_letter_limit < 0:
            raise ValueError("delivery needs at least one attempt per event and room for one retry")


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An event given up: why (`rejected` or `attempts`), after how many attempts, the last answer."""

    kind: str
    id: str
    function: str
    reason: str
    attempts: int
    last: str


class _Retry(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class _Rejected(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(str(status))
        self.status = status


@dataclass(order=True, slots=True)
class _Attempt:
    due: float
    seq: int
    event: RelayEvent = field(compare=False)
    attempts: int = field(default=0, compare=False)
    last: str = field(default="", compare=False)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own back-off


class DeliveryLane:
    """One function's events and its sender thread."""

    def __init__(
        self, function: str, url: str, signer: Signer, metrics: RelayMetrics, settings: DeliverySettings
    ) -> None:
        self.function, self.url, self.signer = function, url, signer
        self.metrics, self.settings = metrics, settings
        self._fresh: collections.deque[RelayEvent] = collections.deque()
        self._retrying: list[_Attempt] = []  # a heap by due time
        self._dead: collections.deque[DeadLetter] = collections.deque(maxlen=settings.dead_letter_limit)
        self._seq = itertools.count()
        self._failures = 0  # consecutive failed attempts of the lane (any event)
        self._pause_until = 0.0
        self._last_failed = -1
        self._in_flight = False
        self._ready = threading.Condition()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._random = random.Random()

    # ---- producer side ---------------------------------------------------------------------
    def put(self, event: RelayEvent) -> None:
        with self._ready:
            if len(self._fresh) >= self.settings.queue_limit:
                oldest = self._fresh.popleft()
                self.metrics.events_dropped.labels(oldest.kind, self.function, "queue-full").inc()
            self._fresh.append(event)
            self._idle.clear()
            self.metrics.queue_depth.labels(self.function).set(len(self._fresh))
            self._ready.notify()

    def depth(self) -> int:
        """Fresh events waiting for their first attempt."""
        with self._ready:
            return len(self._fresh)

    def retrying(self) -> int:
        with self._ready:
            return len(self._retrying)

    def dead_letters(self) -> list[DeadLetter]:
        with self._ready:
            return list(self._dead)

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is queued, retrying or in flight (tests, benchmarks)."""
        return self._idle.wait(timeout)

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"deliver-{self.function}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._ready:
            self._ready.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    # ---- sender ------------------------------------------------------------------------------
    def _next(self) -> _Attempt | None:
        """The next attempt to make, once the lane's pause is over; None when the lane stops."""
        with self._ready:
            while not self._stop.is_set():
                now = time.monotonic()
                if now < self._pause_until:
                    self._ready.wait(self._pause_until - now)
                    continue
                picked = self._pick(now)
                if picked is not None:
                    self._in_flight = True
                    return picked
                if not self._fresh and not self._retrying:
                    self._idle.set()
                due = self._retrying[0].due - now if self._retrying else 0.5
                self._ready.wait(max(0.001, min(due, 0.5)))
            return None

    def _pick(self, now: float) -> _Attempt | None:
        """A due retry (oldest first), unless it is the one that just failed and a fresh one can go."""
        due = bool(self._retrying) and self._retrying[0].due <= now
        fresh = bool(self._fresh) and len(self._retrying) < self.settings.retry_limit
        if due and (self._retrying[0].seq != self._last_failed or not fresh):
            return heapq.heappop(self._retrying)
        if fresh:
            event = self._fresh.popleft()
            self.metrics.queue_depth.labels(self.function).set(len(self._fresh))
            return _Attempt(now, next(self._seq), event)
        return None

    def _run(self) -> None:
        with httpx.Client(timeout=self.settings.timeout) as http:
            while (attempt := self._next()) is not None:
                self._make(http, attempt)

    def _make(self, http: httpx.Client, attempt: _Attempt) -> None:
        event = attempt.event
        try:
            if self._stop.is_set():
                return  # stopped (leadership lost) between taking the event and sending it
            self._send_once(http, event)
        except _Retry as retry:
            self.metrics.events_failed.labels(event.kind, self.function, retry.reason).inc()
            self._failed(attempt, retry)
            return
        except _Rejected as rejected:
            attempt.attempts += 1
            self.metrics.events_failed.labels(event.kind, self.function, str(rejected.status)).inc()
            with self._ready:
                self._failures = 0  # the function answered: it is up
                self._dead_letter(attempt, "rejected", f"HTTP {rejected.status}")
            return
        finally:
            with self._ready:
                self._in_flight = False
                self.metrics.retrying.labels(self.function).set(len(self._retrying))
        with self._ready:
            self._failures = 0

    def _failed(self, attempt: _Attempt, retry: _Retry) -> None:
        now = time.monotonic()
        asked = 0.0 if retry.retry_after is None else min(retry.retry_after, self.settings.max_retry_after)
        attempt.attempts += 1
        attempt.last = retry.reason
        with self._ready:
            self._failures += 1
            self._pause_until = now + max(self._backoff(self._failures), asked)
            self._last_failed = attempt.seq
            if attempt.attempts >= self.settings.max_attempts:
                self._dead_letter(attempt, "attempts", retry.reason)
                return
            attempt.due = now + max(self._backoff(attempt.attempts + 1), asked)
            heapq.heappush(self._retrying, attempt)

    def _backoff(self, step: int) -> float:
        cap = min(self.settings.max_backoff, self.settings.first_backoff * 2 ** max(0, step - 1))
        return self._random.uniform(cap / 2, cap)

    def _dead_letter(self, attempt: _Attempt, reason: str, last: str) -> None:
        """Give the event up (call with the lane's lock held): counted, logged once, kept."""
        event = attempt.event
        self.metrics.events_dropped.labels(event.kind, self.function, reason).inc()
        self._dead.append(DeadLetter(event.kind, event.id, self.function, reason, attempt.attempts, last))
        log.warning(
            "%s: dead-lettered %s %s after %d attempt(s), last %s (%s)",
            self.function,
            event.kind,
            event.id,
            attempt.attempts,
            last,
            reason,
        )

    def _send_once(self, http: httpx.Client, event: RelayEvent) -> None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = json.dumps(
            event.cloudevent(source=self.settings.source, time=stamp), separators=(",", ":")
        ).encode()
        headers = self.signer(self.url, body, {"content-type": CONTENT_TYPE})
        try:
            answer = http.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise _Retry("connection") from exc
        status = answer.status_code
        if status < 300:
            self.metrics.events_delivered.labels(event.kind, self.function).inc()
            if event.seen_at:
                self.metrics.delivery_latency.labels(self.function).observe(
                    max(0.0, time.monotonic() - event.seen_at)
                )
            return
        if status >= 500 or status in RETRIED_STATUSES:
            raise _Retry(str(status), _retry_after(answer.headers.get("retry-after")))
        raise _Rejected(status)
