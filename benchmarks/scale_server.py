"""The scale benchmark's API server: the embedded one, loaded with a world, in its own process.

Role: `WorldServer.start(world)` forks a process that creates every object of `world` through
the embedded server's in-process API (`gpupool.sandbox.kubeapi.Cluster`: the same admission,
defaulting and validation as over HTTP, without the HTTP), then serves it on 127.0.0.1 and
counts, per request, the call (verb and resource, as RBAC names them) and the response bytes.
`counters()` returns the counts since the last call and resets them, with the CPU seconds the
serving process spent meanwhile (its own serving time, reported apart from the function's). The
server lives in its own process so that the function's memory and CPU are measured alone, as on
Lambda.

Must not: be used by the functions' code, or change the world after loading it (the functions do).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import yaml

from benchmarks.scale_world import NOW, ScaleWorld
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock, kubeconfig
from gpupool.sandbox.kubeapi.handler import KubeHTTPServer, KubeRequestHandler
from gpupool.sandbox.kubeapi.routes import ResourcePath, parse

__all__ = ["Counters", "WorldServer", "call_name"]

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class Counters:
    calls: Counter[str]
    response_bytes: int
    server_cpu_s: float = 0.0


def call_name(method: str, path: str) -> str:
    """`list pods`, `get gpupools`, `update gpunodeclaims/status`…: the call as RBAC names it."""
    target = parse(path.split("?", 1)[0].rstrip("/"))
    if not isinstance(target, ResourcePath):
        return f"{method} {path}"
    resource = target.plural + (f"/{target.subresource}" if target.subresource else "")
    if method == "GET":
        verb = "watch" if "watch=" in path else ("get" if target.name else "list")
    else:
        verb = _VERBS.get(method, method)
    return f"{verb} {resource}"


class _Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.bytes = 0
        self.cpu = time.process_time()

    def take(self) -> tuple[dict[str, int], int, float]:
        with self.lock:
            now = time.process_time()
            taken = (dict(self.calls), self.bytes, now - self.cpu)
            self.calls, self.bytes, self.cpu = Counter(), 0, now
            return taken


class _CountingWriter:
    def __init__(self, inner: Any, tally: _Tally) -> None:
        self._inner, self._tally = inner, tally

    def write(self, data: bytes) -> int:
        with self._tally.lock:
            self._tally.bytes += len(data)
        written: int = self._inner.write(data)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _handler(tally: _Tally) -> type[KubeRequestHandler]:
    class CountingHandler(KubeRequestHandler):
        def setup(self) -> None:
            super().setup()
            self.wfile = _CountingWriter(self.wfile, tally)  # type: ignore[assignment]

        def _dispatch(self, method: str) -> None:
            with tally.lock:
                tally.calls[call_name(method, self.path)] += 1
            super()._dispatch(method)

    return CountingHandler


def load(api: EmbeddedKubeAPI, world: ScaleWorld) -> Counter[str]:
    """Create every object of `world` in `api`'s cluster, statuses through the status subresource."""
    cluster = api.cluster
    namespaces = cluster.resolve("", "v1", "namespaces")
    cluster.create(namespaces, None, {"metadata": {"name": "workloads"}})
    created: Counter[str] = Counter()
    for group, plural, body in world.manifests():
        rt = cluster.resolve(group, "v1", plural)
        namespace = body["metadata"].get("namespace") if rt.namespaced else None
        stored = cluster.create(rt, namespace, body)
        if "status" in body and rt.has_status and not rt.builtin:
            name = stored["metadata"]["name"]
            cluster.update(rt, "", name, {**stored, "status": body["status"]}, subresource="status")
        created[plural] += 1
    return created


def _serve(world: ScaleWorld, directory: str, conn: Connection) -> None:
    began = time.perf_counter()
    clock = ManualClock(NOW - timedelta(days=1))
    api = EmbeddedKubeAPI(clock=clock, watch_history=1_000)
    created = load(api, world)
    clock.set(NOW)
    tally = _Tally()
    server = KubeHTTPServer(("127.0.0.1", 0), api.cluster)
    server.RequestHandlerClass = _handler(tally)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    path = Path(directory) / f"kubeconfig-{world.nodes}"
    url = f"http://127.0.0.1:{server.server_address[1]}"
    path.write_text(yaml.safe_dump(kubeconfig(url), sort_keys=False))
    conn.send({"kubeconfig": str(path), "created": dict(created), "load_s": time.perf_counter() - began})
    while True:
        command = conn.recv()
        if command == "counters":
            conn.send(tally.take())
        else:
            break
    server.shutdown()
    conn.send("stopped")


class WorldServer:
    """The parent's handle on the serving process."""

    def __init__(self, world: ScaleWorld, directory: Path) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(world, str(directory), child), daemon=True)
        self._process.start()
        ready: dict[str, Any] = self._conn.recv()
        self.kubeconfig: str = ready["kubeconfig"]
        self.created: dict[str, int] = ready["created"]
        self.load_s: float = ready["load_s"]

    def counters(self) -> Counters:
        self._conn.send("counters")
        calls, sent, cpu = self._conn.recv()
        return Counters(Counter(calls), sent, cpu)

    def stop(self) -> None:
        self._conn.send("stop")
        self._conn.recv()
        self._process.join(timeout=10)
