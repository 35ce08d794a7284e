"""The read half of the in-memory `Cluster` port, and the object store both halves share.

Role: `MemoryClusterStore` keeps Kubernetes objects by kind and name, stamps resourceVersions
(and uid / creationTimestamp on create), raises Conflict on a stale write and NotFound on a
missing object, and answers the port's reads (pods past their termination grace are dropped
first). `MemoryCluster` (`cluster.py`) adds the writes.

Must not: decide anything; talk to a real API server.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.cluster import TensorFusionCluster, TensorFusionClusterStatus
from gpupool.core.model.constants import LABEL_COMPONENT, LABEL_ENABLED
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.service.errors import Conflict, NotFound
from gpupool.testing.memory_ports.recorder import CallRecorder, MemoryClock

__all__ = ["MemoryClusterStore", "merge_labels"]

T = TypeVar("T")


def _meta(obj: Any) -> ObjectMeta:
    meta: ObjectMeta = obj.metadata
    return meta


class MemoryClusterStore(CallRecorder):
    """The objects, their resourceVersions and the read half of the `Cluster` port."""

    def __init__(self, clock: MemoryClock) -> None:
        super().__init__()
        self.clock = clock
        self.objects: dict[str, dict[str, Any]] = defaultdict(dict)
        self.events: list[dict[str, Any]] = []
        self.leases: dict[str, tuple[str, datetime]] = {}
        self.pdb_blocked: set[str] = set()  # "namespace/name" pods whose eviction a PDB refuses
        self.evicted: list[str] = []
        # Pod name → grace: an evicted pod listed here stays (deleting) until the clock passes it.
        self.termination_grace: dict[str, timedelta] = {}
        self._terminating: dict[str, datetime] = {}
        # Seconds each claim listing takes (outside the lock), to widen race windows in concurrency tests.
        self.read_delay = 0.0
        self._rv = itertools.count(1)

    # ---- storage helpers -----------------------------------------------------------------
    def _store(self, kind: str, obj: T, *, create: bool = False) -> T:
        meta = _meta(obj)
        update: dict[str, Any] = {"resource_version": str(next(self._rv))}
        if create:
            update |= {"uid": str(uuid.uuid4()), "creation_timestamp": self.clock.now()}
        stored = obj.model_copy(update={"metadata": meta.model_copy(update=update)})  # type: ignore[attr-defined]
        self.objects[kind][meta.name or ""] = stored
        return stored  # type: ignore[no-any-return]

    def _get(self, kind: str, name: str) -> Any:
        try:
            return self.objects[kind][name]
        except KeyError:
            raise NotFound(f"{kind} {name} not found") from None

    def _check_rv(self, current: Any, resource_version: str) -> None:
        if _meta(current).resource_version != resource_version:
            raise Conflict(
                f"{current.kind} {_meta(current).name}: resourceVersion {resource_version} is stale"
            )

    def add(self, *objects: Any) -> None:
        """Seed objects (test setup)."""
        with self.lock:
            for obj in objects:
                self._store(obj.kind, obj, create=_meta(obj).creation_timestamp is None)

    def get(self, kind: str, name: str) -> Any:
        with self.lock:
            return self.objects[kind].get(name)

    def all(self, kind: str) -> list[Any]:
        with self.lock:
            return sorted(self.objects[kind].values(), key=lambda o: _meta(o).name or "")

    # ---- reads ---------------------------------------------------------------------------
    def list_clusters(self) -> list[TensorFusionCluster]:
        return self._call("list_clusters", (), lambda: self.all("TensorFusionCluster"))

    def update_cluster_status(
        self, name: str, status: TensorFusionClusterStatus, *, resource_version: str
    ) -> TensorFusionCluster:
        def work() -> TensorFusionCluster:
            current: TensorFusionCluster = self._get("TensorFusionCluster", name)
            self._check_rv(current, resource_version)
            return self._store("TensorFusionCluster", current.model_copy(update={"status": status}))

        return self._call("update_cluster_status", (name,), work)

    def list_pools(self) -> list[GPUPool]:
        return self._call("list_pools", (), lambda: self.all("GPUPool"))

    def get_pool(self, name: str) -> GPUPool:
        return self._call("get_pool", (name,), lambda: self._get("GPUPool", name))  # type: ignore[no-any-return]

    def list_node_classes(self) -> list[GPUNodeClass]:
        return self._call("list_node_classes", (), lambda: self.all("GPUNodeClass"))

    def list_claims(self) -> list[GPUNodeClaim]:
        claims: list[GPUNodeClaim] = self._call("list_claims", (), lambda: self.all("GPUNodeClaim"))
        if self.read_delay:
            time.sleep(self.read_delay)
        return claims

    def get_claim(self, name: str) -> GPUNodeClaim:
        return self._call("get_claim", (name,), lambda: self._get("GPUNodeClaim", name))  # type: ignore[no-any-return]

    def list_nodes(self) -> list[Node]:
        return self._call("list_nodes", (), lambda: self.all("Node"))

    def list_gpu_nodes(self) -> list[GPUNode]:
        return self._call("list_gpu_nodes", (), lambda: self.all("GPUNode"))

    def list_gpus(self) -> list[GPU]:
        return self._call("list_gpus", (), lambda: self.all("GPU"))

    def list_pods(self, *, node_name: str | None = None, worker_only: bool = False) -> list[Pod]:
        def work() -> list[Pod]:
            for name, gone_at in list(self._terminating.items()):  # grace over: the pod is gone
                if self.clock.now() >= gone_at:
                    self.objects["Pod"].pop(name, None)
                    del self._terminating[name]
            pods: list[Pod] = self.all("Pod")
            if node_name is not None:
                pods = [p for p in pods if p.spec.node_name == node_name]
            if worker_only:
                pods = [
                    p
                    for p in pods
                    if p.metadata.labels.get(LABEL_ENABLED) == "true"
                    and p.metadata.labels.get(LABEL_COMPONENT) == "worker"
                ]
            return pods

        return self._call("list_pods", (node_name, worker_only), work)


def merge_labels(current: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """`current` with `changes` applied: a value sets the key, None removes it."""
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged
