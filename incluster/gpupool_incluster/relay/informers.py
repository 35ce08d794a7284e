"""One list+watch per resource in the relay process, shared by the scheduler hub and the forwarder.

Role: `SharedInformers(api, metrics=...)` holds at most one `SharedInformer` per watched model
type (`informer(Pod)`), created and started on first use — the way client-go's shared informer
factory feeds several controllers from one watch per resource. Each informer runs one
`watching.ListWatch` (resume from the last resourceVersion with bookmarks, re-list on 410 Gone,
back-off with jitter, restarts counted by kind and reason, a missing resource synced and idle),
reads every changed object into its model once (`unreadable.read_or_skip`: an object that does
not fit is skipped with a Warning Event, and its subscribers keep what they last read of it),
keeps the current models by namespace/name, and hands each change to every subscriber, in order.
A re-list reports what vanished since the last listing as deleted (with the model last read).

`subscribe(handler)` first replays the current models to the new subscriber (each as first
seen, `deleted=False`), then adds it, under the informer's lock, so it misses no change and
sees none twice: a forwarder that (re)gains leadership gets the current state as a fresh relay
would. `Subscription.cancel()` removes it (waiting for a delivery in progress) and leaves the
stream running for the others, and for the next subscriber's replay. A subscriber that raises
does not stop the others from getting the change; the first error is raised afterwards, so the
stream re-lists as it does on any other error (one that raises during its own replay is logged
and subscribed all the same: its caller — the Lease's thread — must not fail).

Must not: interpret objects (subscribers do), hold a subscriber's lock, or call a subscriber
for a kind it did not subscribe to.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from kubernetes import client as _client

from gpupool.core.model.base import TopLevel
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.model.scheduling import SchedulingConfigTemplate
from gpupool.core.model.workload import WorkloadProfile
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.unreadable import Report, event_reporter, read_or_skip
from gpupool_incluster.relay.watching import ListWatch, WatchTimings

__all__ = ["WATCHABLE", "ChangeHandler", "SharedInformer", "SharedInformers", "Subscription"]

log = logging.getLogger("gpupool.relay.watch")
client: Any = _client
ModelT = TypeVar("ModelT", bound=TopLevel)
ModelT_contra = TypeVar("ModelT_contra", bound=TopLevel, contravariant=True)

# Every resource the relay may watch: the model it is read into → (API group, plural).
WATCHABLE: Mapping[type[TopLevel], tuple[str, str]] = {
    Pod: ("", "pods"),
    Node: ("", "nodes"),
    KarpenterNodeClaim: ("karpenter.sh", "nodeclaims"),
    **{
        model: ("tensor-fusion.ai", model.PLURAL)
        for model in (
            GPU,
            GPUPool,
            SchedulingConfigTemplate,
            GPUResourceQuota,
            WorkloadProfile,
            GPUNodeClaim,
            TensorFusionCluster,
        )
    },
}


class ChangeHandler(Protocol[ModelT_contra]):
    """A subscriber: called with each change of its kind, in order, from the informer's thread."""

    def __call__(self, obj: ModelT_contra, /, *, deleted: bool) -> None: ...


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _lister(api: Any, model: type[TopLevel]) -> Callable[..., Any]:
    found = WATCHABLE.get(model)
    if found is None:
        raise ValueError(f"the relay does not watch {model.KIND or model.__name__} objects")
    group, plural = found
    if model is Pod:
        return cast(Callable[..., Any], client.CoreV1Api(api).list_pod_for_all_namespaces)
    if model is Node:
        return cast(Callable[..., Any], client.CoreV1Api(api).list_node)
    custom = client.CustomObjectsApi(api)
    version = model.API_VERSION.rpartition("/")[2]

    def lister(**kwargs: Any) -> Any:
        return custom.list_cluster_custom_object(group, version, plural, **kwargs)

    return lister


@dataclass(eq=False)
class Subscription:
    """One subscriber of one informer; `cancel()` once it should hear no more."""

    informer: SharedInformer[Any]
    handler: ChangeHandler[Any]

    def cancel(self) -> None:
        self.informer.unsubscribe(self)


class SharedInformer(Generic[ModelT]):
    """One resource's stream and cache; its ListWatch is the only writer of the cache."""

    def __init__(
        self,
        model: type[ModelT],
        lister: Callable[..., Any],
        *,
        stop: threading.Event,
        metrics: RelayMetrics,
        report: Report,
        timings: WatchTimings | None = None,
    ) -> None:
        self.model, self.kind = model, model.KIND
        self._stop, self._report = stop, report
        self._lock = threading.RLock()  # delivery, replay and (un)subscribing
        self._cache: dict[str, ModelT] = {}
        self._subscriptions: list[Subscription] = []
        self._reflector = ListWatch(self.kind, lister, self, stop=stop, metrics=metrics, timings=timings)
        self._thread: threading.Thread | None = None

    @property
    def synced(self) -> threading.Event:
        """Set once the resource has been listed (or found absent)."""
        return self._reflector.synced

    @property
    def absent(self) -> bool:
        return self._reflector.absent

    def start(self) -> None:
        if self._thread is None:
            self._thread = self._reflector.start()

    def interrupt(self) -> None:
        self._reflector.interrupt()

    def cached(self) -> list[ModelT]:
        with self._lock:
            return list(self._cache.values())

    # ---- subscribers -------------------------------------------------------------------------
    def subscribe(self, handler: ChangeHandler[ModelT]) -> Subscription:
        """Replay the current models to `handler` (each as first seen), then deliver each change."""
        subscription = Subscription(self, handler)
        with self._lock:
            for obj in list(self._cache.values()):
                try:
                    handler(obj, deleted=False)
                except Exception:  # the subscriber's bug; it still subscribes and hears the next change
                    log.exception("%s: a subscriber failed on %s during its replay", self.kind, obj.name)
            self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

    # ---- the ListWatch's store ------------------------------------------------------------------
    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        listed = {_key(item): item for item in items}
        with self._lock:
            vanished = [(key, obj) for key, obj in self._cache.items() if key not in listed]
        for key, obj in vanished:
            if self._stop.is_set():
                return
            with self._lock:
                self._cache.pop(key, None)
                self._deliver(obj, deleted=True)
        for item in listed.values():
            if self._stop.is_set():
                return
            self.change(item, False)

    def change(self, obj: Mapping[str, Any], deleted: bool) -> None:
        key = _key(obj)
        model = read_or_skip(self.model, obj, self._report, deleted=deleted)  # once per change
        with self._lock:
            if deleted:
                last = self._cache.pop(key, None)
                model = last if model is None else model  # an unreadable last state: what was read
            elif model is not None:
                self._cache[key] = model
            if model is not None:
                self._deliver(model, deleted=deleted)

    def _deliver(self, obj: ModelT, *, deleted: bool) -> None:
        failures: list[Exception] = []
        for subscription in tuple(self._subscriptions):
            try:
                subscription.handler(obj, deleted=deleted)
            except Exception as exc:  # the others still get the change; the stream re-lists after
                failures.append(exc)
        if failures:
            raise failures[0]


class SharedInformers:
    """At most one informer per watched model over one API client, each started on first use.

    `stop` (or `stop()`) ends every stream; the streams otherwise live as long as the process.
    """

    def __init__(
        self,
        api: Any,
        *,
        metrics: RelayMetrics,
        stop: threading.Event | None = None,
        timings: WatchTimings | None = None,
        report: Report | None = None,
    ) -> None:
        self.api, self.metrics = api, metrics
        self.stopping = stop or threading.Event()
        self.timings = timings or WatchTimings()
        self._report = report if report is not None else event_reporter(api)
        self._lock = threading.Lock()
        self._informers: dict[type[TopLevel], SharedInformer[Any]] = {}

    def informer(self, model: type[ModelT]) -> SharedInformer[ModelT]:
        with self._lock:
            found = self._informers.get(model)
            if found is None:
                found = SharedInformer(
                    model,
                    _lister(self.api, model),
                    stop=self.stopping,
                    metrics=self.metrics,
                    report=self._report,
                    timings=self.timings,
                )
                self._informers[model] = found
                found.start()
            return cast(SharedInformer[ModelT], found)

    def subscribe(self, model: type[ModelT], handler: ChangeHandler[ModelT]) -> Subscription:
        return self.informer(model).subscribe(handler)

    def stop(self) -> None:
        """End every stream now (open watches are closed, not left to their timeout)."""
        self.stopping.set()
        with self._lock:
            informers = list(self._informers.values())
        for informer in informers:
            informer.interrupt()
