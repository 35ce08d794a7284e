"""The forwarder: watched changes → relay events → batching windows → one delivery lane per function.

Role: `Forwarder.start()` subscribes to the process's shared streams (`informers`) of Pods,
Nodes, GPUNodeClaims, GPUPools, TensorFusionClusters and Karpenter NodeClaims (idle when that
CRD is absent), translates each change (`changes`), passes it through the batching windows
(`batching`, ticked by a timer thread) and queues what leaves on the lane of the function it is
for (`delivery`). An event for a function without a `--forward` URL has nowhere to go: it is
counted in `gpupool_relay_events_dropped{reason="no-forward"}` and logged (a warning the first
time per function, naming the flag that would send it; debug after that), never queued.
`stop()` unsubscribes and stops the lanes; the streams go on (the hub reads them too).
A later `start()` (leadership regained) is replayed the current state, each object as first
seen, so what changed meanwhile is delivered again (the functions are idempotent), as a
restarted relay's first listing does.

Must not: serve HTTP, open watches of its own, or forward while another replica holds the lease
(the caller starts and stops it from the leader election).
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gpupool.core.intake.routing import FUNCTIONS
from gpupool_incluster.relay.batching import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_WINDOW_SECONDS, Batcher
from gpupool_incluster.relay.changes import WATCHED_KINDS, ChangeTranslator, RelayEvent, WatchedObject
from gpupool_incluster.relay.delivery import DeliveryLane, DeliverySettings
from gpupool_incluster.relay.informers import SharedInformer, SharedInformers, Subscription
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import Signer

__all__ = ["FUNCTIONS", "ForwardSettings", "Forwarder", "warn_unsigned"]

log = logging.getLogger("gpupool.relay.forward")


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def warn_unsigned(urls: Mapping[str, str], auth: str) -> list[str]:
    """Log (and return) the functions whose events would leave the host unsigned or in clear text."""
    risky = sorted(
        f for f, url in urls.items() if not _loopback(url) and (auth == "none" or url.startswith("http:"))
    )
    for function in risky:
        log.warning("events for %s go to %s unsigned or over plain HTTP", function, urls[function])
    return risky


@dataclass(frozen=True, slots=True)
class ForwardSettings:
    urls: Mapping[str, str] = field(default_factory=dict)
    idle: float = DEFAULT_IDLE_SECONDS
    max_window: float = DEFAULT_MAX_WINDOW_SECONDS
    delivery: DeliverySettings = field(default_factory=DeliverySettings)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.urls) - set(FUNCTIONS))
        if unknown:
            raise ValueError(f"--forward: unknown function {unknown[0]!r}; choose launch, bind or compact")


class Forwarder:
    def __init__(
        self, informers: SharedInformers, signer: Signer, settings: ForwardSettings, metrics: RelayMetrics
    ) -> None:
        self.informers, self.signer, self.settings, self.metrics = informers, signer, settings, metrics
        self._lifecycle = threading.Lock()  # start / stop; never held by a delivery
        self._lock = threading.Lock()  # the pipeline: translator, windows, lanes
        self._stop = threading.Event()
        self._streams: list[SharedInformer[Any]] = []
        self._subscriptions: list[Subscription] = []
        self._lanes: dict[str, DeliveryLane] = {}
        self._batcher = Batcher(idle=settings.idle, max_window=settings.max_window)
        self._translator = ChangeTranslator()
        self._unrouted: set[str] = set()  # functions whose events had nowhere to go (warned once)
        self.running = False

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        with self._lifecycle:
            if self.running:
                return
            with self._lock:
                self._stop = threading.Event()
                self._batcher = Batcher(idle=self.settings.idle, max_window=self.settings.max_window)
                self._lanes = {
                    name: DeliveryLane(name, url, self.signer, self.metrics, self.settings.delivery)
                    for name, url in self.settings.urls.items()
                }
                for lane in self._lanes.values():
                    lane.start()
                for kind in WATCHED_KINDS:
                    self._translator.forget_all(kind)  # the replay below is each object's first sight
            # Outside the pipeline lock: a subscription replays through `_observe`, which takes it.
            self._streams = [self.informers.informer(kind) for kind in WATCHED_KINDS]
            self._subscriptions = [stream.subscribe(self._observe) for stream in self._streams]
            threading.Thread(
                target=self._tick, args=(self._stop,), name="forward-windows", daemon=True
            ).start()
            self.running = True

    def stop(self) -> None:
        with self._lifecycle:
            if not self.running:
                return
            for subscription in self._subscriptions:
                subscription.cancel()  # waits for a delivery in progress; the stream goes on
            self._subscriptions = []
            with self._lock:
                self._stop.set()
                for lane in self._lanes.values():
                    lane.stop()
            self.running = False

    def synced(self) -> bool:
        return self.running and all(stream.synced.is_set() for stream in self._streams)

    def wait_delivered(self, timeout: float) -> bool:
        """Windows flushed and every lane idle (tests and benchmarks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                pending = self._batcher.next_deadline() is not None
            if not pending and all(lane.wait_idle(0) for lane in self._lanes.values()):
                return True
            time.sleep(0.05)
        return False

    # ---- pipeline ------------------------------------------------------------------------------
    def _observe(self, obj: WatchedObject, /, *, deleted: bool) -> None:
        now = time.monotonic()
        with self._lock:
            events = self._translator.observe(obj, deleted=deleted, seen_at=now)
            ready: list[RelayEvent] = []
            for event in events:
                self.metrics.events_seen.labels(event.kind, event.function).inc()
                ready += self._batcher.add(event, now)
            self._queue(ready)

    def _tick(self, stop: threading.Event) -> None:
        while not stop.is_set():
            with self._lock:
                self._queue(self._batcher.due(time.monotonic()))
                deadline = self._batcher.next_deadline()
            pause = 0.2 if deadline is None else max(0.01, min(0.2, deadline - time.monotonic()))
            stop.wait(pause)

    def _queue(self, events: list[RelayEvent]) -> None:
        for event in events:
            if event.coalesced > 1:
                self.metrics.events_coalesced.labels(event.kind, event.function).inc(event.coalesced - 1)
            lane = self._lanes.get(event.function)
            if lane is None:
                self._unroutable(event)
            elif not self._stop.is_set():
                lane.put(event)

    def _unroutable(self, event: RelayEvent) -> None:
        """An event for a function with no --forward URL: counted, logged, not queued."""
        self.metrics.events_dropped.labels(event.kind, event.function, "no-forward").inc()
        if event.function in self._unrouted:
            log.debug("%s for %s dropped: no --forward %s=URL", event.kind, event.function, event.function)
            return
        self._unrouted.add(event.function)
        log.warning(
            "%s for %s dropped: no --forward %s=URL is configured; further ones are counted in "
            'gpupool_relay_events_dropped{reason="no-forward"}',
            event.kind,
            event.function,
            event.function,
        )
