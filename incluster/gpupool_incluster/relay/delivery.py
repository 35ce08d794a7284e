"""At-least-once delivery of relay events to one function's URL.

Role: `DeliveryLane` holds a bounded queue (full → the oldest waiting event is dropped and
counted) and one worker thread that POSTs each event as a structured CloudEvent, signed by the
configured `Signer`. A 2xx is delivered; 5xx, 429 and connection errors are retried with capped
exponential back-off and full jitter, honouring `retry-after` (seconds) — the event stays in
flight until it is delivered or the lane stops; any other 4xx is logged and dropped (counted).
One lane per function, so a function that is down does not hold the others back.

Must not: decide which events exist (`changes`) or when they leave (`batching`); log bodies or
headers (they carry signatures).
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import logging
import random
import threading
import time
from dataclasses import dataclass

import httpx

from gpupool_incluster.relay.changes import RelayEvent
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import Signer

__all__ = ["DeliveryLane", "DeliverySettings"]

log = logging.getLogger("gpupool.relay.forward")
CONTENT_TYPE = "application/cloudevents+json"


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    queue_limit: int = 10_000
    first_backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0
    timeout: float = 15.0
    source: str = "/gpupool/relay/cluster"

    def __post_init__(self) -> None:
        if self.queue_limit < 1:
            raise ValueError("the delivery queue needs room for at least one event")
        if not 0 < self.first_backoff <= self.max_backoff:
            raise ValueError("back-off needs 0 < first <= max")


class _Retry(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own back-off


class DeliveryLane:
    """One function's queue and its sender thread."""

    def __init__(
        self, function: str, url: str, signer: Signer, metrics: RelayMetrics, settings: DeliverySettings
    ) -> None:
        self.function, self.url, self.signer = function, url, signer
        self.metrics, self.settings = metrics, settings
        self._queue: collections.deque[RelayEvent] = collections.deque()
        self._ready = threading.Condition()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._random = random.Random()

    # ---- producer side ---------------------------------------------------------------------
    def put(self, event: RelayEvent) -> None:
        with self._ready:
            if len(self._queue) >= self.settings.queue_limit:
                oldest = self._queue.popleft()
                self.metrics.events_dropped.labels(oldest.kind, self.function, "queue-full").inc()
            self._queue.append(event)
            self._idle.clear()
            self.metrics.queue_depth.labels(self.function).set(len(self._queue))
            self._ready.notify()

    def depth(self) -> int:
        with self._ready:
            return len(self._queue)

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is queued or in flight (tests, benchmarks)."""
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
    def _take(self) -> RelayEvent | None:
        with self._ready:
            while not self._queue and not self._stop.is_set():
                self._idle.set()
                self._ready.wait(0.5)
            if self._stop.is_set():
                return None
            event = self._queue.popleft()
            self.metrics.queue_depth.labels(self.function).set(len(self._queue))
            return event

    def _run(self) -> None:
        with httpx.Client(timeout=self.settings.timeout) as http:
            while (event := self._take()) is not None:
                self._deliver(http, event)

    def _deliver(self, http: httpx.Client, event: RelayEvent) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                self._send_once(http, event)
            except _Retry as retry:
                self.metrics.events_failed.labels(event.kind, self.function, retry.reason).inc()
                cap = min(self.settings.max_backoff, self.settings.first_backoff * 2**attempt)
                pause = self._random.uniform(cap / 2, cap)
                if retry.retry_after is not None:
                    pause = max(pause, min(retry.retry_after, self.settings.max_retry_after))
                attempt += 1
                self._stop.wait(pause)
                continue
            return

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
        if answer.status_code < 300:
            self.metrics.events_delivered.labels(event.kind, self.function).inc()
            if event.seen_at:
                self.metrics.delivery_latency.labels(self.function).observe(
                    max(0.0, time.monotonic() - event.seen_at)
                )
            return
        if answer.status_code == 429 or answer.status_code >= 500:
            raise _Retry(str(answer.status_code), _retry_after(answer.headers.get("retry-after")))
        self.metrics.events_dropped.labels(event.kind, self.function, "rejected").inc()
        log.warning(
            "%s rejected %s %s with HTTP %d; dropped", self.function, event.kind, event.id, answer.status_code
        )
