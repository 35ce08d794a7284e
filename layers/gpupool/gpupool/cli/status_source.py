"""Where `gpupool status` reads a cluster: one list of each kind, or a list+watch of each kind.

Role: `connect(kubeconfig, context)` builds the user's authenticated client (the adapters'
kubeconfig access: `adapters.kube.auth`) and names the server and context; `STREAMS` are the
reads the view needs — GPUPools, GPUNodeClaims, GPUNodes, GPUs, Nodes, TensorFusion pods (two
label selectors: `enabled=true` and `component=worker`, as `core.vocabulary.pods` defines them),
Karpenter NodeClaims (optional: a cluster without Karpenter has none) and Events; all reads,
no writes. `read_once(api)` lists each in pages and fails with one clear line
(`StatusSourceError`): the API server unreachable, credentials refused, the tensor-fusion.ai
CRDs absent. `WatchedCluster(api)` keeps each kind current with the relay's reflector
(`gpupool_incluster.relay.watching.ListWatch`: list, then watch from the list's resourceVersion,
re-list after `410 Gone`, back off and re-list after a dropped connection), counts changes, and
keeps what each failing watch last said (its log records, captured instead of printed, so a
live screen stays whole). `parse(raw)` reads the raw objects into the core's models; an object
that does not fit is left out and named.

Must not: write anything to the cluster (an unreadable object is not reported as an Event, as
the relay would: this is a read-only view), decide anything, or render.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gpupool.core.model.constants import (
    API_GROUP,
    COMPONENT_WORKER,
    LABEL_COMPONENT,
    LABEL_ENABLED,
)
from gpupool.core.model.event import Event
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.unreadable import unreadable_message
from gpupool.core.views.cluster import ClusterRead

__all__ = [
    "STREAMS",
    "Connection",
    "StatusSourceError",
    "Stream",
    "WatchedCluster",
    "connect",
    "parse",
    "read_once",
]

PAGE = 500
REQUEST_TIMEOUT = (5, 30)  # connect, read (seconds)
# ListWatch's logger, and the HTTP library's (its retry warnings come from the watch threads):
# captured while watching, so nothing prints over the screen or from a thread at exit.
_WATCH_LOGGERS = ("gpupool.relay.watch", "urllib3")
_JOIN_SECONDS = 3.0
POLL_SECONDS = 0.05  # how often the caller's wait looks at the change count


class StatusSourceError(Exception):
    """The cluster cannot be read; the message is one line that says why."""


@dataclass(frozen=True)
class Stream:
    """One read: a kind (group, plural; "" is the core group), optionally by label."""

    key: str
    model: type[BaseModel]
    group: str
    plural: str
    label_selector: str | None = None
    optional: bool = False  # a cluster may lack the resource (Karpenter's CRD)


STREAMS: tuple[Stream, ...] = (
    Stream("pools", GPUPool, API_GROUP, GPUPool.PLURAL),
    Stream("claims", GPUNodeClaim, API_GROUP, GPUNodeClaim.PLURAL),
    Stream("gpu_nodes", GPUNode, API_GROUP, GPUNode.PLURAL),
    Stream("gpus", GPU, API_GROUP, GPU.PLURAL),
    Stream("nodes", Node, "", "nodes"),
    Stream("enabled_pods", Pod, "", "pods", label_selector=f"{LABEL_ENABLED}=true"),
    Stream("worker_pods", Pod, "", "pods", label_selector=f"{LABEL_COMPONENT}={COMPONENT_WORKER}"),
    Stream("nodeclaims", KarpenterNodeClaim, "karpenter.sh", "nodeclaims", optional=True),
    Stream("events", Event, "", "events"),
)
Raw = dict[str, list[Mapping[str, Any]]]


@dataclass(frozen=True)
class Connection:
    api: Any  # kubernetes.client.ApiClient
    server: str
    context: str | None


def _kubeconfig_path(given: str | None) -> str:
    path = given or os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    files = [p for p in path.split(os.pathsep) if p]
    if not any(Path(p).expanduser().is_file() for p in files):
        source = (
            "--kubeconfig" if given else ("KUBECONFIG" if os.environ.get("KUBECONFIG") else "the default")
        )
        raise StatusSourceError(
            f"no kubeconfig file at {path} ({source}); give --kubeconfig FILE or set KUBECONFIG"
        )
    return path


def connect(kubeconfig: str | None, context: str | None) -> Connection:
    """The user's client for the kubeconfig's context (its current context unless `context`)."""
    from kubernetes import config as kube_config

    from gpupool.adapters.kube.auth import KubeAccess, KubeAccessError, build_api_client

    path = _kubeconfig_path(kubeconfig)
    config: Any = kube_config
    try:
        contexts, current = config.list_kube_config_contexts(config_file=path)
    except (config.ConfigException, OSError, ValueError) as error:
        raise StatusSourceError(f"kubeconfig {path} cannot be read: {error}") from error
    names = [c.get("name") for c in contexts or []]
    if context is not None and context not in names:
        raise StatusSourceError(
            f"kubeconfig {path} has no context {context!r} (contexts: {', '.join(map(str, names)) or 'none'})"
        )
    try:
        api = build_api_client(KubeAccess(mode="kubeconfig", kubeconfig_path=path, context=context))
    except KubeAccessError as error:
        raise StatusSourceError(str(error)) from error
    chosen = context or (current or {}).get("name")
    return Connection(api=api, server=str(api.configuration.host), context=chosen)


def lister(api: Any, stream: Stream) -> Callable[..., Any]:
    """The stream's list call (also what a watch streams), taking the client's keyword arguments."""
    from kubernetes import client as k8s

    extra: dict[str, Any] = {"label_selector": stream.label_selector} if stream.label_selector else {}
    if stream.group == "":
        core: Any = k8s.CoreV1Api(api)
        calls = {
            "nodes": core.list_node,
            "pods": core.list_pod_for_all_namespaces,
            "events": core.list_event_for_all_namespaces,
        }
        call = calls[stream.plural]
    else:
        custom: Any = k8s.CustomObjectsApi(api)
        call = functools.partial(custom.list_cluster_custom_object, stream.group, "v1", stream.plural)

    def list_call(**kwargs: Any) -> Any:
        return call(**extra, **kwargs)

    return list_call


def _reason(error: BaseException) -> str:
    """The cause of a transport error in a few words: `connection refused`, a TLS mismatch named
    for what to check, `timed out` — never the name of urllib3's retry wrapper."""
    text = str(getattr(error, "reason", None) or error)
    lowered = text.lower()
    if "certificate_verify_failed" in lowered or "certificate verify failed" in lowered:
        if "hostname mismatch" in lowered or "not valid for" in lowered or "doesn't match" in lowered:
            return "TLS: the server's certificate is not for this host name (check the kubeconfig's server)"
        return (
            "TLS: the server's certificate is not signed by the kubeconfig's certificate-authority "
            "(a kubeconfig for another cluster, or a rotated CA?)"
        )
    if (
        "wrong_version_number" in lowered
        or "record layer failure" in lowered
        or "unknown protocol" in lowered
    ):
        return "TLS: the server at this address does not speak TLS (an http:// endpoint?)"
    if "ssl" in lowered:
        found_ssl = re.search(r"\[SSL[^\]]*\] ([^'\")(]+)", text)
        return f"TLS: {found_ssl.group(1).strip() if found_ssl else 'handshake failed'}"
    found = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if found:
        return found.group(1).strip().lower()
    if "timed out" in lowered:
        return "timed out"
    if "name or service not known" in lowered or "nodename nor servname" in lowered:
        return "the host name does not resolve"
    return type(error).__name__


def _status_message(error: Any) -> str:
    try:
        body = json.loads(getattr(error, "body", None) or "{}")
    except ValueError:
        body = {}
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or getattr(error, "reason", "") or "no message")


def read_once(connection: Connection) -> Raw:
    """Every stream listed once (paged). StatusSourceError: unreachable, refused, CRDs missing."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    raw: Raw = {}
    for stream in STREAMS:
        call = lister(connection.api, stream)
        items: list[Mapping[str, Any]] = []
        token: str | None = None
        try:
            while True:
                page = {"limit": PAGE, **({"_continue": token} if token else {})}
                response = call(_preload_content=False, _request_timeout=REQUEST_TIMEOUT, **page)
                listing = json.loads(response.data)
                items += [i for i in listing.get("items") or [] if isinstance(i, Mapping)]
                token = (listing.get("metadata") or {}).get("continue")
                if not token:
                    break
        except ApiException as error:
            if error.status == 404 and stream.optional:
                raw[stream.key] = []
                continue
            if error.status == 404 and stream.group == API_GROUP:
                raise StatusSourceError(
                    f"the cluster at {connection.server} has no tensor-fusion.ai {stream.plural} resource: "
                    "install the CRDs (the chart's crds/, or `gpupool crds --write DIR` and kubectl apply)"
                ) from error
            if error.status in (401, 403):
                raise StatusSourceError(
                    f"the API server at {connection.server} refused to list {stream.plural} "
                    f"({error.status} {error.reason}): {_status_message(error)}"
                ) from error
            raise StatusSourceError(
                f"listing {stream.plural} at {connection.server} failed ({error.status} {error.reason}): "
                f"{_status_message(error)}"
            ) from error
        except (HTTPError, OSError) as error:
            raise StatusSourceError(
                f"cannot reach the Kubernetes API server at {connection.server}: {_reason(error)}"
            ) from error
        except ValueError as error:
            raise StatusSourceError(
                f"the API server at {connection.server} sent a body that is not JSON"
            ) from error
        raw[stream.key] = items
    return raw


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def parse(raw: Raw) -> ClusterRead:
    """The raw objects as models; each one that does not fit is left out and named in `unreadable`."""
    typed: dict[str, list[Any]] = {}
    unreadable: list[str] = []
    for stream in STREAMS:
        parsed: list[Any] = []
        for item in raw.get(stream.key, []):
            try:
                parsed.append(stream.model.model_validate(dict(item)))
            except ValidationError as error:
                unreadable.append(unreadable_message(item, error))
        typed[stream.key] = parsed
    pods: dict[str, Pod] = {}
    for pod in [*typed["enabled_pods"], *typed["worker_pods"]]:
        pods[f"{pod.metadata.namespace}/{pod.name}"] = pod
    return ClusterRead(
        pools=typed["pools"],
        claims=typed["claims"],
        nodes=typed["nodes"],
        gpu_nodes=typed["gpu_nodes"],
        gpus=typed["gpus"],
        pods=list(pods.values()),
        nodeclaims=typed["nodeclaims"],
        events=typed["events"],
        unreadable=unreadable,
    )


class _Store:
    """One stream's current objects by namespace/name (a ListWatch's store)."""

    def __init__(self, key: str, changed: Callable[[str], None]) -> None:
        self.key = key
        self._changed = changed
        self._lock = threading.Lock()
        self._objects: dict[str, Mapping[str, Any]] = {}

    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        with self._lock:
            self._objects = {_key(item): item for item in items}
        self._changed(self.key)

    def change(self, obj: Mapping[str, Any], deleted: bool) -> None:
        with self._lock:
            if deleted:
                self._objects.pop(_key(obj), None)
            else:
                self._objects[_key(obj)] = obj
        self._changed(self.key)

    def items(self) -> list[Mapping[str, Any]]:
        with self._lock:
            return list(self._objects.values())


class _Problems(logging.Handler):
    """What each failing watch said last (ListWatch logs `<kind> watch failed (…); re-listing in …`)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.guard = threading.Lock()
        self.by_stream: dict[str, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.WARNING or not record.args or record.name != _WATCH_LOGGERS[0]:
            return
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        with self.guard:
            self.by_stream[str(args[0])] = record.getMessage()

    def clear(self, key: str) -> None:
        with self.guard:
            self.by_stream.pop(key, None)


class WatchedCluster:
    """Each stream kept current by a list+watch; `wait_for_change` wakes the screen."""

    def __init__(self, connection: Connection, *, initial: Raw | None = None) -> None:
        from gpupool_incluster.relay.metrics import RelayMetrics
        from gpupool_incluster.relay.watching import ListWatch, WatchTimings

        self.connection = connection
        self.stop = threading.Event()
        self._counting = threading.Lock()
        self.changes = 0
        self.problems = _Problems()
        self.metrics = RelayMetrics()  # the reflector counts its restarts here (never served)
        self._stores = {s.key: _Store(s.key, self._changed) for s in STREAMS}
        for key, items in (initial or {}).items():
            self._stores[key].replace(items)
        self._watches = [
            ListWatch(
                stream.key,
                lister(connection.api, stream),
                self._stores[stream.key],
                stop=self.stop,
                metrics=self.metrics,
                timings=WatchTimings(watch_seconds=240, first_backoff=0.5, max_backoff=10.0),
            )
            for stream in STREAMS
        ]
        self._loggers = [logging.getLogger(name) for name in _WATCH_LOGGERS]
        self._threads: list[threading.Thread] = []

    def _changed(self, key: str) -> None:
        self.problems.clear(key)
        with self._counting:
            self.changes += 1

    def start(self) -> None:
        for logger in self._loggers:
            logger.addHandler(self.problems)
            logger.propagate = False  # the screen shows the problem; nothing prints over it
        self._threads = [watch.start() for watch in self._watches]

    def close(self) -> None:
        """Stop every watch and wait (a few seconds at most) for its thread to end."""
        self.stop.set()
        for watch in self._watches:
            watch.interrupt()
        for thread in self._threads:
            thread.join(timeout=_JOIN_SECONDS / max(1, len(self._threads)))
        for logger in self._loggers:
            logger.removeHandler(self.problems)
            logger.propagate = True

    def still_running(self) -> bool:
        """Whether a watch thread outlived `close()` (blocked in a read the interrupt did not reach)."""
        return any(thread.is_alive() for thread in self._threads)

    def wait_for_change(self, seen: int, timeout: float) -> int:
        """The change count once it passes `seen`, or after `timeout` seconds (ages move on).

        Polled with `time.sleep`, holding no lock: the caller's thread is the one Ctrl-C's
        KeyboardInterrupt lands in, and raised inside `threading.Condition.wait` it can leave the
        condition's lock released twice (RuntimeError, a traceback instead of a clean stop) or
        held (the watch threads then block on it)."""
        deadline = time.monotonic() + timeout
        while self.changes == seen and not self.stop.is_set() and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        return self.changes

    def raw(self) -> Raw:
        return {key: store.items() for key, store in self._stores.items()}

    def trouble(self) -> list[str]:
        """What the watches that are failing now said last."""
        with self.problems.guard:
            return [self.problems.by_stream[k] for k in sorted(self.problems.by_stream)]

    def restarts(self) -> int:
        """Watches re-listed since the start (the reflector's count, errors and 410s)."""
        total = 0.0
        for family in self.metrics.registry.collect():
            if family.name == "gpupool_relay_watch_restarts":
                total += sum(s.value for s in family.samples if s.name.endswith("_total"))
        return int(total)
