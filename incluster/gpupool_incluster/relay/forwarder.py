"""The forwarder: watched changes → relay events → batching windows → one delivery lane per function.

Role: `Forwarder.start()` opens a list+watch per kind (Pods, Nodes, GPUNodeClaims, GPUPools,
TensorFusionClusters, and Karpenter NodeClaims when that CRD exists), translates each change
(`changes`), passes it through the batching windows (`batching`, ticked by a timer thread) and
queues what leaves on the lane of the function it is for (`delivery`). Events for a function
without a `--forward` URL are counted as seen and not queued. `stop()` ends it all; a later
`start()` (leadership regained, or a restarted relay) re-lists, so what changed meanwhile is
delivered again (the functions are idempotent).

Must not: serve HTTP, or forward while another replica holds the lease (the caller starts and
stops it from the leader election).
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client as _client
from pydantic import ValidationError

from gpupool.core.model import constants as c
from gpupool_incluster.relay.batching import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_WINDOW_SECONDS, Batcher
from gpupool_incluster.relay.changes import WATCHED_KINDS, ChangeTranslator, RelayEvent
from gpupool_incluster.relay.delivery import DeliveryLane, DeliverySettings
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import Signer
from gpupool_incluster.relay.watching import ListWatch, WatchTimings

__all__ = ["FUNCTIONS", "ForwardSettings", "Forwarder", "warn_unsigned"]

client: Any = _client
log = logging.getLogger("gpupool.relay.forward")
FUNCTIONS = ("launch", "bind", "compact")


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
    watch: WatchTimings = field(default_factory=WatchTimings)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.urls) - set(FUNCTIONS))
        if unknown:
            raise ValueError(f"--forward: unknown function {unknown[0]!r}; choose launch, bind or compact")


def _listers(api: Any) -> dict[str, Callable[..., Any]]:
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)

    def crd(group: str, plural: str) -> Callable[..., Any]:
        def lister(**kwargs: Any) -> Any:
            return custom.list_cluster_custom_object(group, "v1", plural, **kwargs)

        return lister

    return {
        "Pod": core.list_pod_for_all_namespaces,
        "Node": core.list_node,
        "GPUNodeClaim": crd(c.API_GROUP, "gpunodeclaims"),
        "NodeClaim": crd("karpenter.sh", "nodeclaims"),
        "GPUPool": crd(c.API_GROUP, "gpupools"),
        "TensorFusionCluster": crd(c.API_GROUP, "tensorfusionclusters"),
    }


class Forwarder:
    def __init__(self, api: Any, signer: Signer, settings: ForwardSettings, metrics: RelayMetrics) -> None:
        self.api, self.signer, self.settings, self.metrics = api, signer, settings, metrics
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watches: list[ListWatch] = []
        self._lanes: dict[str, DeliveryLane] = {}
        self._batcher = Batcher(idle=settings.idle, max_window=settings.max_window)
        self._translator = ChangeTranslator()
        self.running = False

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self.running:
                return
            self._stop = threading.Event()
            self._translator = ChangeTranslator()
            self._batcher = Batcher(idle=self.settings.idle, max_window=self.settings.max_window)
            self._lanes = {
                name: DeliveryLane(name, url, self.signer, self.metrics, self.settings.delivery)
                for name, url in self.settings.urls.items()
            }
            for lane in self._lanes.values():
                lane.start()
            self._watches = [
                ListWatch(
                    kind,
                    lister,
                    self._observer(kind),
                    stop=self._stop,
                    metrics=self.metrics,
                    timings=self.settings.watch,
                )
                for kind, lister in _listers(self.api).items()
            ]
            for watch in self._watches:
                watch.start()
            threading.Thread(
                target=self._tick, args=(self._stop,), name="forward-windows", daemon=True
            ).start()
            self.running = True

    def stop(self) -> None:
        with self._lock:
            if not self.running:
                return
            self._stop.set()
            for watch in self._watches:
                watch.interrupt()
            for lane in self._lanes.values():
                lane.stop()
            self.running = False

    def synced(self) -> bool:
        return self.running and all(w.synced.is_set() for w in self._watches)

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
    def _observer(self, kind: str) -> Callable[[Mapping[str, Any], bool], None]:
        model = next(m for m in WATCHED_KINDS if kind == m.KIND)

        def observe(obj: Mapping[str, Any], deleted: bool) -> None:
            now = time.monotonic()
            try:
                parsed = model.model_validate(obj)
            except ValidationError as error:  # an unreadable object means no event
                log.warning("skipping an unreadable %s: %s", kind, error.errors()[0].get("msg"))
                return
            with self._lock:
                events = self._translator.observe(parsed, deleted=deleted, seen_at=now)
                ready: list[RelayEvent] = []
                for event in events:
                    self.metrics.events_seen.labels(event.kind, event.function).inc()
                    ready += self._batcher.add(event, now)
                self._queue(ready)

        return observe

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
            if lane is not None and not self._stop.is_set():
                lane.put(event)
