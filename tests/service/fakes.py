"""In-memory fakes of the service ports (Compute, Cluster, Clock) for service tests.

They record every call, accept an injected error before or after any method (`fail_next`,
`crash_after`), keep resourceVersions like the API server (a stale write raises Conflict),
ignore status on create like a status subresource, keep a deleting object until its
finalizers are gone, and are thread-safe (one lock), so concurrent invocations can be tested.
The contract tests hold the real adapters to the same behaviour.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from gpupool.core.model.base import Condition, ObjectMeta
from gpupool.core.model.cluster import TensorFusionCluster, TensorFusionClusterStatus
from gpupool.core.model.constants import (
    LABEL_COMPONENT,
    LABEL_ENABLED,
    LABEL_NODE_PROVISIONER,
    TAG_CLUSTER,
    TAG_MANAGED_BY,
    TAG_MANAGED_BY_VALUE,
    TAG_NODE_CLASS,
    TAG_NODE_NAME,
)
from gpupool.core.model.foreign import Node, NodeSpec, NodeStatus, Pod, PodSpec
from gpupool.core.model.node import GPU, GPUNode, GPUNodeStatus
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool, GPUPoolStatus
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.snapshot import ManagedInstance
from gpupool.core.quantity import Quantity
from gpupool.service.errors import (
    AlreadyExists,
    CapacityUnavailable,
    Conflict,
    NotFound,
    PermanentError,
    Throttled,
)

T = TypeVar("T")
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Crash(BaseException):
    """A simulated function death between two steps (not a domain error: nothing catches it)."""


class FakeClock:
    def __init__(self, now: datetime = START) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        self._now += delta


class _Recorder:
    """Call log and injected errors shared by both fakes."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._before: dict[str, deque[BaseException]] = defaultdict(deque)
        self._after: dict[str, deque[BaseException]] = defaultdict(deque)

    def fail_next(self, method: str, error: BaseException) -> None:
        """The next call of `method` raises `error` without doing anything."""
        self._before[method].append(error)

    def crash_after(self, method: str, error: BaseException | None = None) -> None:
        """The next call of `method` does its work, then raises (default: Crash)."""
        self._after[method].append(error or Crash(f"crash after {method}"))

    def count(self, method: str) -> int:
        return sum(1 for name, _ in self.calls if name == method)

    def _call(self, method: str, args: tuple[Any, ...], work: Callable[[], T]) -> T:
        with self.lock:
            self.calls.append((method, args))
            if self._before[method]:
                raise self._before[method].popleft()
            result = work()
            if self._after[method]:
                raise self._after[method].popleft()
            return result


class FakeCompute(_Recorder):
    """Instances in memory; `no_capacity` holds offering keys (type/zone/capacity) that fail."""

    def __init__(self, clock: FakeClock, *, cluster: str = "demo") -> None:
        super().__init__()
        self.clock = clock
        self.cluster = cluster
        self.instances: dict[str, ManagedInstance] = {}
        self.untagged: dict[str, ManagedInstance] = {}
        self.no_capacity: set[str] = set()
        self.zones: frozenset[str] | None = None  # launchable zones of every node class; None = any
        self.launched: list[tuple[str, str]] = []  # (claim, offering key)
        self._ids = itertools.count(1)

    def launch(
        self, claim: GPUNodeClaim, node_class: GPUNodeClass, offering: OfferingRef, *, client_token: str
    ) -> str:
        def work() -> str:
            if offering.key in self.no_capacity:
                raise CapacityUnavailable(f"InsufficientInstanceCapacity for {offering.key}")
            instance_id = f"i-{next(self._ids):017x}"
            tags = {
                TAG_MANAGED_BY: TAG_MANAGED_BY_VALUE,
                TAG_NODE_NAME: claim.name,
                TAG_NODE_CLASS: node_class.name,
                TAG_CLUSTER: self.cluster,
                **node_class.spec.tags,
            }
            self.instances[instance_id] = ManagedInstance(
                instance_id=instance_id,
                state="pending",
                claim_name=claim.name,
                node_class=node_class.name,
                cluster=self.cluster,
                instance_type=offering.instance_type,
                zone=offering.zone,
                capacity_type=offering.capacity_type,
                launch_time=self.clock.now(),
                tags=tags,
            )
            self.launched.append((claim.name, offering.key))
            return instance_id

        return self._call("launch", (claim.name, offering.key, client_token), work)

    def launchable_zones(self, node_class: GPUNodeClass) -> frozenset[str] | None:
        return self._call("launchable_zones", (node_class.name,), lambda: self.zones)

    def find_by_claim(self, claim_name: str) -> ManagedInstance | None:
        def work() -> ManagedInstance | None:
            found = [i for i in self.instances.values() if i.claim_name == claim_name and not i.gone]
            return min(found, key=lambda i: i.instance_id) if found else None

        return self._call("find_by_claim", (claim_name,), work)

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        return self._call(
            "describe",
            (tuple(instance_ids),),
            lambda: [self.instances[i] for i in instance_ids if i in self.instances],
        )

    def terminate(self, instance_id: str) -> None:
        def work() -> None:
            if instance_id in self.untagged:
                raise PermanentError(f"{instance_id} is not tagged managed-by={TAG_MANAGED_BY_VALUE}")
            if instance_id in self.instances:
                self.set_state(instance_id, "terminated")

        self._call("terminate", (instance_id,), work)

    def list_managed(self) -> list[ManagedInstance]:
        return self._call("list_managed", (), lambda: [i for i in self.instances.values() if not i.gone])

    # ---- test helpers --------------------------------------------------------------------
    def check_connection(self) -> None:
        self._call("check_connection", (), lambda: None)

    def set_state(self, instance_id: str, state: str) -> None:
        with self.lock:
            self.instances[instance_id] = self.instances[instance_id].model_copy(update={"state": state})

    def live(self) -> list[ManagedInstance]:
        return [i for i in self.instances.values() if not i.gone]


def _meta(obj: Any) -> ObjectMeta:
    meta: ObjectMeta = obj.metadata
    return meta


class FakeCluster(_Recorder):
    """Kubernetes objects in memory with resourceVersions, finalizers, evictions, events, leases."""

    def __init__(self, clock: FakeClock) -> None:
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
            merged = _merge(current.metadata.annotations, annotations)
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

    def patch_claim_metadata(
        self,
        name: str,
        *,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
        finalizers: Sequence[str] | None = None,
        resource_version: str,
    ) -> GPUNodeClaim:
        def work() -> GPUNodeClaim:
            current: GPUNodeClaim = self._get("GPUNodeClaim", name)
            self._check_rv(current, resource_version)
            meta = current.metadata
            update: dict[str, Any] = {}
            if labels is not None:
                update["labels"] = _merge(meta.labels, labels)
            if annotations is not None:
                update["annotations"] = _merge(meta.annotations, annotations)
            if finalizers is not None:
                update["finalizers"] = list(finalizers)
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
    def patch_node(
        self, name: str, *, labels: Mapping[str, str | None] | None = None, unschedulable: bool | None = None
    ) -> None:
        def work() -> None:
            node: Node = self._get("Node", name)
            meta = node.metadata
            if labels is not None:
                meta = meta.model_copy(update={"labels": _merge(meta.labels, labels)})
            spec = node.spec
            if unschedulable is not None:
                spec = spec.model_copy(update={"unschedulable": unschedulable})
            self._store("Node", node.model_copy(update={"metadata": meta, "spec": spec}))

        self._call("patch_node", (name, dict(labels or {}), unschedulable), work)

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

    def record_event(
        self, *, kind: str, name: str, namespace: str | None, event_type: str, reason: str, message: str
    ) -> None:
        event: dict[str, Any] = {
            "kind": kind,
            "name": name,
            "namespace": namespace,
            "type": event_type,
            "reason": reason,
            "message": message,
        }

        def work() -> None:
            # The port aggregates: the same event again raises the count of the first.
            for recorded in self.events:
                if all(recorded[key] == value for key, value in event.items()):
                    recorded["count"] += 1
                    return
            self.events.append({**event, "count": 1})

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

    def add_pod(self, name: str, node: str, *, worker: bool = False, namespace: str = "default") -> None:
        labels = {LABEL_ENABLED: "true", LABEL_COMPONENT: "worker"} if worker else {}
        self.add(
            Pod(
                metadata=ObjectMeta(name=name, namespace=namespace, labels=labels),
                spec=PodSpec(node_name=node),
            )
        )

    def events_with(self, reason: str) -> list[dict[str, str | None]]:
        return [e for e in self.events if e["reason"] == reason]


def _merge(current: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


# ---- builders: a pool world with overrides -----------------------------------------------

OFFERINGS = (
    OfferingRef(
        instance_type="g4dn.xlarge",
        zone="us-east-1a",
        tflops=Quantity.parse("65"),
        vram=Quantity.parse("16Gi"),
        gpu_count=1,
        hourly_price="0.526",
    ),
    OfferingRef(
        instance_type="g6.xlarge",
        zone="us-east-1a",
        tflops=Quantity.parse("121"),
        vram=Quantity.parse("24Gi"),
        gpu_count=1,
        hourly_price="0.805",
    ),
    OfferingRef(
        instance_type="g5.xlarge",
        zone="us-east-1a",
        tflops=Quantity.parse("125"),
        vram=Quantity.parse("24Gi"),
        gpu_count=1,
        hourly_price="1.006",
    ),
)


def make_pool(
    name: str = "pool-a",
    *,
    min_tflops: str | None = "130",
    min_vram: str | None = "32Gi",
    warm_tflops: str | None = None,
    warm_vram: str | None = None,
    max_tflops: str | None = None,
    max_vram: str | None = None,
    mode: str = "Provisioned",
    node_class: str = "gpu-class",
    requirements: list[dict[str, Any]] | None = None,
    period: str = "5m",
) -> GPUPool:
    def amount(tflops: str | None, vram: str | None) -> dict[str, str] | None:
        if tflops is None and vram is None:
            return None
        return {k: v for k, v in (("tflops", tflops), ("vram", vram)) if v is not None}

    capacity = {
        key: value
        for key, value in (
            ("minResources", amount(min_tflops, min_vram)),
            ("warmResources", amount(warm_tflops, warm_vram)),
            ("maxResources", amount(max_tflops, max_vram)),
        )
        if value is not None
    }
    return GPUPool.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "capacityConfig": capacity,
                "nodeManagerConfig": {
                    "provisioningMode": mode,
                    "nodeProvisioner": {"nodeClass": node_class, "gpuRequirements": requirements or []},
                    "nodeCompaction": {"period": period},
                },
            },
        }
    )


class World:
    """A clock, both fakes, a node class and `Deps` wired to them."""

    def __init__(
        self, *pools: GPUPool, offerings: Sequence[OfferingRef] = OFFERINGS, **settings: Any
    ) -> None:
        from gpupool.service.deps import Deps, Settings

        self.clock = FakeClock()
        self.compute = FakeCompute(self.clock)
        self.cluster = FakeCluster(self.clock)
        self.cluster.add(GPUNodeClass(metadata=ObjectMeta(name="gpu-class")), *pools)
        counter = itertools.count(1)
        self._suffix_lock = threading.Lock()

        def suffix() -> str:
            with self._suffix_lock:
                return f"{next(counter):04d}"

        self.deps = Deps(
            compute=self.compute,
            cluster=self.cluster,
            clock=self.clock,
            settings=Settings(cluster_name="demo", **settings),
            offerings=tuple(offerings),
            new_suffix=suffix,
            sleep=lambda seconds: self.clock.advance(timedelta(seconds=seconds)),
        )

    def with_holder(self, holder: str) -> Any:
        from dataclasses import replace

        return replace(self.deps, holder=holder)

    def claims(self, *, live_only: bool = False) -> list[GPUNodeClaim]:
        claims: list[GPUNodeClaim] = self.cluster.all("GPUNodeClaim")
        if live_only:
            claims = [
                c
                for c in claims
                if c.metadata.deletion_timestamp is None and (c.status is None or c.status.phase != "Failed")
            ]
        return claims

    def claim(self, name: str) -> GPUNodeClaim:
        claim: GPUNodeClaim = self.cluster.get("GPUNodeClaim", name)
        return claim

    def pool(self, name: str = "pool-a") -> GPUPool:
        pool: GPUPool = self.cluster.get("GPUPool", name)
        return pool
