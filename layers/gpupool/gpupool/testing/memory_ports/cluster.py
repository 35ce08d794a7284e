"""In-memory `Cluster` port: Kubernetes objects by kind and name, the port's reads and writes.

Role: `MemoryCluster` behaves as the contract tests hold the real adapter to: it stamps
resourceVersions (and uid / creationTimestamp on create; a pod stored without a phase gets Pending,
as the API server sets it), raises Conflict on a stale write and NotFound on a missing object, does
not take status from a create (status subresource), keeps a deleting claim until its finalizers are
gone, reads lists in the API server's order ((namespace, name)) with its selector rules (a node's
equality labels; a pod's `spec.nodeName` — "" for none — and `status.phase`), and gives node
summaries as a `kubectl get nodes` row holds them (`summary_of`), raises Throttled on an eviction a
PDB refuses (`pdb_blocked`), lets an evicted pod stay deleting for a grace (`termination_grace`;
reads drop it once the clock passes it), raises the count of the same Event again, and holds a Lease
until it expires. An Event names its object as the adapter's does: kind, name, namespace, and the
uid and resourceVersion of the object when it exists (an Event about a missing object has none).
A plain read of one kind the port declares (`list_<kinds>()`, `get_<kind>(name)`) is derived from
the port's types (`kind_read`) rather than written out, so a new one needs no line here.
`join_node` / `add_pod` play the kubelet and node agent for tests and for `gpupool simulate
capacity`. Thread-safe (one lock), so concurrent invocations can be tested.

Must not: decide anything; talk to a real API server.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import time
import typing
import uuid
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from gpupool.core.model.base import Condition, ObjectMeta
from gpupool.core.model.cluster import TensorFusionCluster, TensorFusionClusterStatus
from gpupool.core.model.constants import LABEL_COMPONENT, LABEL_ENABLED, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import (
    Node,
    NodeSpec,
    NodeStatus,
    Pod,
    PodSpec,
    PodStatus,
)
from gpupool.core.model.node import GPUNode, GPUNodeStatus
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.model.pool import GPUPool, GPUPoolStatus
from gpupool.core.quantity import Quantity
from gpupool.service.errors import AlreadyExists, Conflict, NotFound, Throttled
from gpupool.service.ports import CLUSTER_METHODS, ClaimMetadataPatch, Cluster, NodePatch, ObjectEvent
from gpupool.testing.memory_ports.recorder import START, CallRecorder, MemoryClock

__all__ = ["MemoryCluster", "kind_read", "summary_of"]

T = TypeVar("T")


def _meta(obj: Any) -> ObjectMeta:
    meta: ObjectMeta = obj.metadata
    return meta


class MemoryCluster(CallRecorder):
    """Kubernetes objects in memory with resourceVersions, finalizers, evictions, events, leases."""

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
        changes: dict[str, Any] = {"metadata": meta.model_copy(update=update)}
        if isinstance(obj, Pod) and obj.status.phase is None:  # the API server's default on create
            changes["status"] = obj.status.model_copy(update={"phase": "Pending"})
        stored = obj.model_copy(update=changes)  # type: ignore[attr-defined]
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
    def __getattr__(self, name: str) -> Any:
        """A plain read of one kind the port declares and this double does not write out
        (`kind_read`): `list_<kinds>()` answers every stored object of that kind in name order,
        `get_<kind>(name)` the one of that name (NotFound when there is none); recorded as any
        call is. Any other name is missing, as on any object."""
        method, read = name, kind_read(name)
        if read is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {method!r}")
        kind, lists = read

        def list_kind() -> list[Any]:
            return self._call(method, (), lambda: self.all(kind))

        def get_kind(name: str) -> Any:
            return self._call(method, (name,), lambda: self._get(kind, name))

        return list_kind if lists else get_kind

    def update_cluster_status(
        self, name: str, status: TensorFusionClusterStatus, *, resource_version: str
    ) -> TensorFusionCluster:
        def work() -> TensorFusionCluster:
            current: TensorFusionCluster = self._get("TensorFusionCluster", name)
            self._check_rv(current, resource_version)
            return self._store("TensorFusionCluster", current.model_copy(update={"status": status}))

        return self._call("update_cluster_status", (name,), work)

    def list_claims(self) -> list[GPUNodeClaim]:
        claims: list[GPUNodeClaim] = self._call("list_claims", (), lambda: self.all("GPUNodeClaim"))
        if self.read_delay:
            time.sleep(self.read_delay)
        return claims

    def list_nodes(self, *, summary: bool = False, labels: Mapping[str, str] | None = None) -> list[Node]:
        def work() -> list[Node]:
            nodes: list[Node] = self.all("Node")
            wanted = dict(labels or {})
            picked = [n for n in nodes if all(n.metadata.labels.get(k) == v for k, v in wanted.items())]
            return [summary_of(n) for n in picked] if summary else picked

        return self._call("list_nodes", (summary, tuple(sorted((labels or {}).items()))), work)

    def list_gpu_nodes(self, *, summary: bool = False) -> list[GPUNode]:
        def work() -> list[GPUNode]:
            found: list[GPUNode] = self.all("GPUNode")
            return [g.printed() for g in found] if summary else found

        return self._call("list_gpu_nodes", (summary,), work)

    def list_pods(self, *, node_name: str | None = None, phase: str | None = None) -> list[Pod]:
        def work() -> list[Pod]:
            for name, gone_at in list(self._terminating.items()):  # grace over: the pod is gone
                if self.clock.now() >= gone_at:
                    self.objects["Pod"].pop(name, None)
                    del self._terminating[name]
            pods: list[Pod] = sorted(
                self.objects["Pod"].values(), key=lambda p: (p.metadata.namespace or "", p.name)
            )
            if node_name is not None:  # field selector spec.nodeName: a missing field reads as ""
                pods = [p for p in pods if (p.spec.node_name or "") == node_name]
            if phase is not None:
                pods = [p for p in pods if (p.status.phase or "") == phase]
            return pods

        return self._call("list_pods", (node_name, phase), work)

    # ---- pools ---------------------------------------------------------------------------
    def create_pool(self, pool: GPUPool) -> GPUPool:
        def work() -> GPUPool:
            if pool.name in self.objects["GPUPool"]:
                raise AlreadyExists(f"GPUPool {pool.name} exists")
            return self._store("GPUPool", pool.model_copy(update={"status": None}), create=True)

        return self._call("create_pool", (pool.name,), work)

    def replace_pool_spec(self, pool: GPUPool, *, resource_version: str) -> GPUPool:
        def work() -> GPUPool:
            current: GPUPool = self._get("GPUPool", pool.name)
            self._check_rv(current, resource_version)
            meta = current.metadata.model_copy(
                update={"labels": pool.metadata.labels, "annotations": pool.metadata.annotations}
            )
            return self._store("GPUPool", current.model_copy(update={"spec": pool.spec, "metadata": meta}))

        return self._call("replace_pool_spec", (pool.name, resource_version), work)

    def patch_pool_annotations(
        self, name: str, annotations: Mapping[str, str | None], *, resource_version: str
    ) -> GPUPool:
        def work() -> GPUPool:
            current: GPUPool = self._get("GPUPool", name)
            self._check_rv(current, resource_version)
            merged = merge_labels(current.metadata.annotations, annotations)
            meta = current.metadata.model_copy(update={"annotations": merged})
            return self._store("GPUPool", current.model_copy(update={"metadata": meta}))

        return self._call("patch_pool_annotations", (name, dict(annotations)), work)

    def update_pool_status(self, name: str, status: GPUPoolStatus, *, resource_version: str) -> GPUPool:
        def work() -> GPUPool:
            current: GPUPool = self._get("GPUPool", name)
            self._check_rv(current, resource_version)
            return self._store("GPUPool", current.model_copy(update={"status": status}))

        return self._call("update_pool_status", (name,), work)

    # ---- claims --------------------------------------------------------------------------
    def create_claim(self, claim: GPUNodeClaim) -> GPUNodeClaim:
        def work() -> GPUNodeClaim:
            if claim.name in self.objects["GPUNodeClaim"]:
                raise AlreadyExists(f"GPUNodeClaim {claim.name} exists")
            # Like the status subresource: status is not taken from a create.
            return self._store("GPUNodeClaim", claim.model_copy(update={"status": None}), create=True)

        return self._call("create_claim", (claim.name,), work)

    def update_claim_status(
        self, name: str, status: GPUNodeClaimStatus, *, resource_version: str
    ) -> GPUNodeClaim:
        def work() -> GPUNodeClaim:
            current: GPUNodeClaim = self._get("GPUNodeClaim", name)
            self._check_rv(current, resource_version)
            return self._store("GPUNodeClaim", current.model_copy(update={"status": status}))

        return self._call("update_claim_status", (name, status.phase, status.instance_id), work)

    def patch_claim_metadata(self, name: str, patch: ClaimMetadataPatch) -> GPUNodeClaim:
        def work() -> GPUNodeClaim:
            current: GPUNodeClaim = self._get("GPUNodeClaim", name)
            self._check_rv(current, patch.resource_version)
            meta = current.metadata
            update: dict[str, Any] = {}
            if patch.labels is not None:
                update["labels"] = merge_labels(meta.labels, patch.labels)
            if patch.annotations is not None:
                update["annotations"] = merge_labels(meta.annotations, patch.annotations)
            if patch.finalizers is not None:
                update["finalizers"] = list(patch.finalizers)
            stored = self._store(
                "GPUNodeClaim", current.model_copy(update={"metadata": meta.model_copy(update=update)})
            )
            if stored.metadata.deletion_timestamp is not None and not stored.metadata.finalizers:
                del self.objects["GPUNodeClaim"][name]
            return stored

        return self._call("patch_claim_metadata", (name,), work)

    def delete_claim(self, name: str) -> None:
        def work() -> None:
            current: GPUNodeClaim = self._get("GPUNodeClaim", name)
            if not current.metadata.finalizers:
                del self.objects["GPUNodeClaim"][name]
            elif current.metadata.deletion_timestamp is None:
                meta = current.metadata.model_copy(update={"deletion_timestamp": self.clock.now()})
                self._store("GPUNodeClaim", current.model_copy(update={"metadata": meta}))

        self._call("delete_claim", (name,), work)

    # ---- nodes, pods, events, leases -----------------------------------------------------
    def patch_node(self, name: str, patch: NodePatch) -> None:
        def work() -> None:
            node: Node = self._get("Node", name)
            meta = node.metadata
            if patch.labels is not None:
                meta = meta.model_copy(update={"labels": merge_labels(meta.labels, patch.labels)})
            if patch.annotations:
                meta = meta.model_copy(
                    update={"annotations": merge_labels(meta.annotations, patch.annotations)}
                )
            spec = node.spec
            if patch.unschedulable is not None:
                spec = spec.model_copy(update={"unschedulable": patch.unschedulable})
            self._store("Node", node.model_copy(update={"metadata": meta, "spec": spec}))

        self._call("patch_node", (name, dict(patch.labels or {}), patch.unschedulable), work)

    def evict_pod(self, namespace: str, name: str) -> None:
        def work() -> None:
            key = f"{namespace}/{name}"
            if key in self.pdb_blocked:
                raise Throttled(f"Cannot evict pod {key}: it would violate the pod's disruption budget")
            if name not in self.objects["Pod"]:
                raise NotFound(f"pod {key} not found")
            self.evicted.append(key)
            grace = self.termination_grace.get(name)
            if grace is None:
                del self.objects["Pod"][name]
                return
            pod: Pod = self.objects["Pod"][name]
            deleting = pod.metadata.model_copy(update={"deletion_timestamp": self.clock.now()})
            self.objects["Pod"][name] = pod.model_copy(update={"metadata": deleting})
            self._terminating.setdefault(name, self.clock.now() + grace)

        self._call("evict_pod", (namespace, name), work)

    def record_event(self, event: ObjectEvent) -> None:
        kind, name, reason = event.kind, event.name, event.reason

        def work() -> None:
            involved = self.objects[kind].get(name) if kind in self.objects else None
            meta = _meta(involved) if involved is not None else None
            recording: dict[str, Any] = {
                "kind": kind,
                "name": name,
                "namespace": event.namespace,
                "uid": (meta.uid or None) if meta is not None else None,
                "resourceVersion": meta.resource_version if meta is not None else None,
                "type": event.event_type,
                "reason": reason,
                "message": event.message,
            }
            identity = ("kind", "name", "namespace", "uid", "type", "reason", "message")
            # The port aggregates: the same event again raises the count of the first.
            for recorded in self.events:
                if all(recorded[key] == recording[key] for key in identity):
                    recorded["count"] += 1
                    return
            self.events.append({**recording, "count": 1})

        self._call("record_event", (kind, name, reason), work)

    def try_acquire_lease(self, name: str, *, holder: str, now: datetime, duration: timedelta) -> bool:
        def work() -> bool:
            current = self.leases.get(name)
            if current is not None and current[0] != holder and current[1] > now:
                return False
            self.leases[name] = (holder, now + duration)
            return True

        return self._call("try_acquire_lease", (name, holder), work)

    def release_lease(self, name: str, *, holder: str) -> None:
        def work() -> None:
            if self.leases.get(name, ("", START))[0] == holder:
                del self.leases[name]

        self._call("release_lease", (name, holder), work)

    # ---- test helpers: the kubelet and the node agent ------------------------------------
    def join_node(
        self,
        claim: str,
        *,
        node_name: str | None = None,
        ready: bool = True,
        tflops: str = "65",
        vram: str = "16Gi",
        available_tflops: str | None = None,
        available_vram: str | None = None,
        labels: Mapping[str, str] | None = None,
        gpu_node_labels: Mapping[str, str] | None = None,
    ) -> str:
        """A node registers with the claim's label and its GPUNode reports capacity."""
        name = node_name or f"node-{claim}"
        conditions = [Condition(type="Ready", status="True" if ready else "False")]
        node = Node(
            metadata=ObjectMeta(name=name, labels={LABEL_NODE_PROVISIONER: claim, **(labels or {})}),
            spec=NodeSpec(),
            status=NodeStatus(conditions=conditions),
        )
        gpu_status = GPUNodeStatus(
            phase="Running",
            total_tflops=Quantity.parse(tflops),
            total_vram=Quantity.parse(vram),
            available_tflops=Quantity.parse(available_tflops or tflops),
            available_vram=Quantity.parse(available_vram or vram),
            total_gpus=1,
        )
        gpu_node = GPUNode(
            metadata=ObjectMeta(name=name, labels=dict(gpu_node_labels or {})), status=gpu_status
        )
        self.add(node, gpu_node)
        return name

    def add_pod(
        self,
        name: str,
        node: str,
        *,
        worker: bool = False,
        namespace: str = "default",
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """A Running pod on `node`; `worker`: labelled as TensorFusion's worker pods are."""
        tagged = {LABEL_ENABLED: "true", LABEL_COMPONENT: "worker"} if worker else {}
        self.add(
            Pod(
                metadata=ObjectMeta(name=name, namespace=namespace, labels={**tagged, **(labels or {})}),
                spec=PodSpec(node_name=node),
                status=PodStatus(phase="Running"),
            )
        )

    def events_with(self, reason: str) -> list[dict[str, str | None]]:
        return [e for e in self.events if e["reason"] == reason]


@functools.cache
def kind_read(method: str) -> tuple[str, bool] | None:
    """The kind a Cluster port method reads, and whether it lists, when the method is a plain
    read of one kind — `list_x(self) -> list[Model]` or `get_x(self, name: str) -> Model`, the
    model's `KIND` naming the kind; None for any other method (those are written out above)."""
    if method not in CLUSTER_METHODS:
        return None
    declared = getattr(Cluster, method)
    parameters = list(inspect.signature(declared).parameters)[1:]
    returns = typing.get_type_hints(declared)["return"]
    lists = typing.get_origin(returns) is list
    model = typing.get_args(returns)[0] if lists else returns
    kind = getattr(model, "KIND", "")
    plain = parameters == [] if lists else (method.startswith("get_") and parameters == ["name"])
    return (kind, lists) if kind and plain else None


def merge_labels(current: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """`current` with `changes` applied: a value sets the key, None removes it."""
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def summary_of(node: Node) -> Node:
    """`node` as a `kubectl get nodes` row holds it (the port's `list_nodes(summary=True)`): its
    metadata, `spec.unschedulable`, and its Ready condition read as "True" (Ready) or "False"
    (False or Unknown: the row says NotReady for both)."""
    ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
    conditions = (
        []
        if ready is None
        else [Condition(type="Ready", status="True" if ready.status == "True" else "False")]
    )
    return Node(
        metadata=node.metadata,
        spec=NodeSpec(unschedulable=node.spec.unschedulable),
        status=NodeStatus(conditions=conditions),
    )
