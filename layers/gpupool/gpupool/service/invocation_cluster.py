"""The cluster as one invocation reads it: each kind read once, every write's answer folded in.

Role: `InvocationCluster(cluster)` is the `Cluster` port for one invocation (`reading_once(deps)` puts it
in the deps an entry point passes on). The kinds a decision's snapshot is cut from —
TensorFusionClusters, GPUPools, GPUNodeClasses, GPUNodeClaims, node and GPUNode summaries — are
read through the real port the first time they are needed (`prefetch` reads several at once, on
threads, so one's answer is parsed while the next is served) and every later read of the
invocation is answered from what was read. A write's answer (the object as the API server stored
it) replaces the object read, so the decisions after a write see it without reading again. What
a write does not answer with is read again by name the next time it is needed — a claim whose
deletion was asked for (gone, or deleting behind its finalizer), the object of a write refused
with Conflict (the retry reads it fresh) — and node summaries after a node is patched are read
again through the port (whose adapter refreshes incrementally). `refresh()` marks everything read
so far to be read again (compaction re-validates a removal on the cluster as it is then). Pods,
GPUs, other node reads, Events, evictions and Leases always go to the port: every port method
this view does not define is the port's own (`__getattr__`), so a call added to the port reaches
the adapter through it without a line here.

Must not: decide anything, write anything the caller did not ask for, keep anything beyond the
invocation, or answer a by-name read with an object it knows to be stale.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from gpupool.service.errors import Conflict, NotFound
from gpupool.service.ports import CLUSTER_METHODS, ClaimMetadataPatch, Cluster, NodePatch

if TYPE_CHECKING:
    from gpupool.core.model.cluster import TensorFusionCluster, TensorFusionClusterStatus
    from gpupool.core.model.foreign import Node
    from gpupool.core.model.node import GPUNode
    from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
    from gpupool.core.model.nodeclass import GPUNodeClass
    from gpupool.core.model.pool import GPUPool, GPUPoolStatus
    from gpupool.service.deps import Deps

__all__ = ["InvocationCluster", "reading_once"]

T = TypeVar("T")
Key = tuple[str, str]


def _key(obj: Any) -> Key:
    return (obj.metadata.namespace or "", obj.name)


class _Kind(Generic[T]):
    """One kind as read this invocation: objects by (namespace, name), and which to read again."""

    def __init__(self, list_all: Callable[[], list[T]], get_one: Callable[[str], T] | None = None) -> None:
        self._list_all, self._get_one = list_all, get_one
        self.objects: dict[Key, T] | None = None  # None: not read yet
        self.stale: set[Key] = set()
        self.relist = False
        self._ordered: list[T] | None = None
        self.changes = 0  # bumped whenever what `all()` would answer may have changed

    @property
    def loaded(self) -> bool:
        return self.objects is not None

    def take(self, listed: list[T]) -> None:
        self.objects = {_key(o): o for o in listed}
        self.stale.clear()
        self.relist = False
        self._ordered = None
        self.changes += 1

    def all(self) -> list[T]:
        if self.objects is None or self.relist or (self.stale and self._get_one is None):
            self.take(self._list_all())
        for key in sorted(self.stale):
            try:
                self.get(key[1])
            except NotFound:  # gone since it was read: `get` forgot it
                continue
        assert self.objects is not None
        if self._ordered is None:
            self._ordered = [self.objects[k] for k in sorted(self.objects)]
        return list(self._ordered)

    def get(self, name: str) -> T:
        key = ("", name)
        known = self.objects.get(key) if self.objects is not None else None
        if known is not None and key not in self.stale and not self.relist:
            return known
        if self._get_one is None:
            raise NotFound(f"{name} is not readable by name")
        self.stale.discard(key)
        try:
            found = self._get_one(name)
        except NotFound:
            if self.objects is not None:
                self.objects.pop(key, None)
                self._ordered = None
                self.changes += 1
            raise
        self.fold(found)
        return found

    def fold(self, obj: T) -> T:
        """A write's (or a fresh read's) answer replaces what was read."""
        if self.objects is not None:
            self.objects[_key(obj)] = obj
            self.stale.discard(_key(obj))
            self._ordered = None
            self.changes += 1
        return obj

    def forget(self, obj: T) -> None:
        if self.objects is not None:
            self.objects.pop(_key(obj), None)
            self._ordered = None
            self.changes += 1

    def mark(self, name: str) -> None:
        if self.objects is not None:
            self.stale.add(("", name))
            self.changes += 1

    def mark_all(self) -> None:
        if self.objects is not None:
            self.stale.update(self.objects)
            self.relist = True
            self.changes += 1


def _guarded(kind: _Kind[Any], name: str, write: Callable[[], T]) -> T:
    """Run a write; a Conflict marks the object so the retry reads it fresh."""
    try:
        return write()
    except Conflict:
        kind.mark(name)
        raise


class InvocationCluster:
    """The Cluster port as one invocation reads it (see module docstring)."""

    def __init__(self, cluster: Cluster) -> None:
        self.inner = cluster
        self._clusters: _Kind[TensorFusionCluster] = _Kind(cluster.list_clusters)
        self._pools: _Kind[GPUPool] = _Kind(cluster.list_pools, cluster.get_pool)
        self._classes: _Kind[GPUNodeClass] = _Kind(cluster.list_node_classes)
        self._claims: _Kind[GPUNodeClaim] = _Kind(cluster.list_claims, cluster.get_claim)
        self._nodes: _Kind[Node] = _Kind(lambda: cluster.list_nodes(summary=True))
        self._gpu_nodes: _Kind[GPUNode] = _Kind(lambda: cluster.list_gpu_nodes(summary=True))
        # What callers work out from the reads (pools.ClusterReads), kept while the kinds it was
        # worked out of did not change (`snapshot_changes`).
        self.memo: dict[object, tuple[object, object]] = {}
        # What the core's membership worked out of this invocation's reads (ClusterObjects.earlier).
        self.membership: dict[str, object] = {}

    @property
    def changes(self) -> int:
        """Grows whenever an answer of this view may differ from the one before."""
        kinds = (self._clusters, self._pools, self._classes, self._claims, self._nodes, self._gpu_nodes)
        return sum(kind.changes for kind in kinds)

    @property
    def snapshot_changes(self) -> tuple[int, int, int, int]:
        """Changes of the kinds a pool snapshot is cut from (claims, node and GPUNode summaries,
        node classes): a pool's status written or a cluster's leaves them as they were."""
        return (self._claims.changes, self._nodes.changes, self._gpu_nodes.changes, self._classes.changes)

    # ---- the invocation's reads ------------------------------------------------------------
    def prefetch(self, *, node_classes: bool = True) -> None:
        """Read the kinds a pool snapshot is cut from that are not read yet, all at once."""
        wanted: list[_Kind[Any]] = [self._claims, self._nodes, self._gpu_nodes]
        if node_classes:
            wanted.append(self._classes)
        missing = [kind for kind in wanted if not kind.loaded or kind.relist]
        if len(missing) < 2:
            return
        with ThreadPoolExecutor(max_workers=len(missing), thread_name_prefix="gpupool-read") as pool:
            answers = [(kind, pool.submit(kind.all)) for kind in missing]
            for _kind, future in answers:
                future.result()

    def __getattr__(self, name: str) -> Any:
        """A port method this view does not define (pods, GPUs, Events, evictions, Leases, any
        call added to the port later): the port's own."""
        if name in CLUSTER_METHODS:
            return getattr(self.inner, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def refresh(self) -> None:
        """Read everything again at its next use (compaction re-validating a removal)."""
        for kind in (self._clusters, self._pools, self._classes, self._claims, self._nodes, self._gpu_nodes):
            kind.mark_all()

    # ---- reads (the Cluster port) ----------------------------------------------------------
    def list_clusters(self) -> list[TensorFusionCluster]:
        return self._clusters.all()

    def list_pools(self) -> list[GPUPool]:
        return self._pools.all()

    def get_pool(self, name: str) -> GPUPool:
        return self._pools.get(name)

    def list_node_classes(self) -> list[GPUNodeClass]:
        return self._classes.all()

    def list_claims(self) -> list[GPUNodeClaim]:
        return self._claims.all()

    def get_claim(self, name: str) -> GPUNodeClaim:
        return self._claims.get(name)

    def list_nodes(self, *, summary: bool = False, labels: Mapping[str, str] | None = None) -> list[Node]:
        if summary and not labels:
            return self._nodes.all()
        return self.inner.list_nodes(summary=summary, labels=labels)

    def list_gpu_nodes(self, *, summary: bool = False) -> list[GPUNode]:
        if summary:
            return self._gpu_nodes.all()
        return self.inner.list_gpu_nodes()

    # ---- writes: the answer replaces what was read -----------------------------------------
    def update_cluster_status(
        self, name: str, status: TensorFusionClusterStatus, *, resource_version: str
    ) -> TensorFusionCluster:
        written = _guarded(
            self._clusters,
            name,
            lambda: self.inner.update_cluster_status(name, status, resource_version=resource_version),
        )
        return self._clusters.fold(written)

    def create_pool(self, pool: GPUPool) -> GPUPool:
        return self._pools.fold(self.inner.create_pool(pool))

    def replace_pool_spec(self, pool: GPUPool, *, resource_version: str) -> GPUPool:
        written = _guarded(
            self._pools,
            pool.name,
            lambda: self.inner.replace_pool_spec(pool, resource_version=resource_version),
        )
        return self._pools.fold(written)

    def patch_pool_annotations(
        self, name: str, annotations: Mapping[str, str | None], *, resource_version: str
    ) -> GPUPool:
        written = _guarded(
            self._pools,
            name,
            lambda: self.inner.patch_pool_annotations(name, annotations, resource_version=resource_version),
        )
        return self._pools.fold(written)

    def update_pool_status(self, name: str, status: GPUPoolStatus, *, resource_version: str) -> GPUPool:
        written = _guarded(
            self._pools,
            name,
            lambda: self.inner.update_pool_status(name, status, resource_version=resource_version),
        )
        return self._pools.fold(written)

    def create_claim(self, claim: GPUNodeClaim) -> GPUNodeClaim:
        return self._claims.fold(self.inner.create_claim(claim))

    def update_claim_status(
        self, name: str, status: GPUNodeClaimStatus, *, resource_version: str
    ) -> GPUNodeClaim:
        written = _guarded(
            self._claims,
            name,
            lambda: self.inner.update_claim_status(name, status, resource_version=resource_version),
        )
        return self._claims.fold(written)

    def patch_claim_metadata(self, name: str, patch: ClaimMetadataPatch) -> GPUNodeClaim:
        written = _guarded(self._claims, name, lambda: self.inner.patch_claim_metadata(name, patch))
        if written.metadata.deletion_timestamp is not None and not written.metadata.finalizers:
            self._claims.forget(written)  # its last finalizer went: the API server removed it
            return written
        return self._claims.fold(written)

    def delete_claim(self, name: str) -> None:
        try:
            self.inner.delete_claim(name)
        finally:
            self._claims.mark(name)  # gone, or deleting behind its finalizer: read it again

    def patch_node(self, name: str, patch: NodePatch) -> None:
        try:
            self.inner.patch_node(name, patch)
        finally:
            self._nodes.mark_all()


def reading_once(deps: Deps) -> Deps:
    """`deps` whose cluster is a fresh `InvocationCluster` (itself when it already is one)."""
    if isinstance(deps.cluster, InvocationCluster):
        return deps
    return replace(deps, cluster=InvocationCluster(deps.cluster))
