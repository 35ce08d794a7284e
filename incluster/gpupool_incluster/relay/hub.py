"""The relay's scheduling hub: one allocator, one lock, and what the webhook needs to know.

Role: apply watched objects (GPUs, pods, Nodes, and the policy objects: GPUPools,
SchedulingConfigTemplates, GPUResourceQuotas, WorkloadProfiles), each already read into its
model, to the allocator; answer extender filter / prioritize, webhook admission,
simulate-schedule and the allocation dump; run bind as reserve (under the lock) → annotate pod →
create Binding, releasing the reservation if a write fails, so a bind that loses a race leaves
the state as it was — and only for pods whose schedulerName is tensor-fusion-scheduler. The
webhook's `enabled-replicas` count is the Pod watch's (`replicas`), never what reviews claim.
With progressive migration on (and a `NodeTainter` given), it feeds the taint keeper
(`migration`): which nodes exist and carry the used-by taint, and a wake-up whenever a node may
have gained its first worker or lost its last. The policy objects are kept in the hub's
`PolicyBook` (`policies`), which the hub calls under its lock; what they mean for placement
(oversubscription, pool modes, quota limits) the hub sets on the allocator. With a
`NodeLabeller` given, it feeds the usable-GPUs label keeper (`usable_gpus`): what the Node watch
shows of that label, and a wake-up whenever a GPU object changes — so kube-scheduler, which does
not watch GPU objects, retries the pods the extender refused once a node's GPUs are there. What each node has
left for pods — its allocatable CPU and memory minus the requests of the pods bound to it
(`HostRoom`, from the same Node and Pod watches) — goes to the allocator too, so the modes that
weigh a pod's CPU and memory (BalancedFit, FragmentationAware) see it in the extender; it is as
fresh as the watch (a pod just bound counts once its binding is seen), and only ranks nodes:
kube-scheduler's own NodeResourcesFit decides whether a pod fits. From the Karpenter NodeClaim
watch it keeps the expansions AutoSelect made (`gpupool.scheduler.extender.reservation`), from
the GPU watch when each node's GPUs were first reported, and from the Pod watch the GPU pods
still waiting: filter and bind keep a pod off a node made for another waiting pod it would crowd
out, until `PLACEMENT_GRACE` after that node's GPUs came.

Must not: serve HTTP (see `app`) or hold a Kubernetes client (it gets a `ClusterWriter` and
optionally a `NodeTainter` and a `NodeLabeller`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from gpupool.core.allocator import Allocation, AllocationError, Allocator, Simulation
from gpupool.core.allocator.build import gpu_info, oversubscription_of, quota_limits
from gpupool.core.allocator.pod_request import (
    ANNOTATION_GPU_IDS,
    RequestError,
    allocation_from_pod,
    request_from_pod,
)
from gpupool.core.allocator.request import GpuRequest
from gpupool.core.allocator.usable_gpus import LABEL_USABLE_GPUS
from gpupool.core.model.constants import ANNOTATION_ENABLED_REPLICAS, SCHEDULER_NAME
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.model.scheduling import SchedulingConfigTemplate
from gpupool.core.model.workload import WorkloadProfile
from gpupool.core.vocabulary.expansions import pod_key_of, reported_at
from gpupool.core.vocabulary.pods import asks_gpupool_for_gpus
from gpupool.scheduler.admission import AdmissionContext, Mutation, mutate_pod
from gpupool.scheduler.extender import (
    ExtenderArgs,
    Reservation,
    handle_filter,
    handle_prioritize,
    holding,
    reservation_of,
    reserve_for_bind,
)
from gpupool.scheduler.host_room import HostRoom
from gpupool.scheduler.pod_record import SCHEDULER_OWNED, record_annotations
from gpupool.scheduler.progressive import has_used_by_taint
from gpupool_incluster.relay.gangs import GangGate
from gpupool_incluster.relay.migration import TaintKeeper
from gpupool_incluster.relay.policies import DEFAULT_POOL_ANNOTATION, PolicyBook
from gpupool_incluster.relay.ports import BindFailed, ClusterWriter, HubSettings, NodeLabeller, NodeTainter
from gpupool_incluster.relay.replicas import ReplicaLedger
from gpupool_incluster.relay.usable_gpus import UsableGpuLabels
from gpupool_incluster.relay.views import apply_annotation_patch, usage_copy

log = logging.getLogger("gpupool.relay")

__all__ = ["DEFAULT_POOL_ANNOTATION", "BindFailed", "ClusterWriter", "HubSettings", "SchedulerHub"]


class SchedulerHub:
    """Thread-safe façade over the allocator for the relay's handlers and watchers."""

    def __init__(
        self,
        writer: ClusterWriter,
        settings: HubSettings | None = None,
        *,
        tainter: NodeTainter | None = None,
        labeller: NodeLabeller | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings or HubSettings()
        self._now = now or (lambda: datetime.now(UTC))
        self.writer = writer
        self.lock = threading.RLock()
        self.allocator = Allocator(self.settings.policy)
        self.policies = PolicyBook()
        self.native_pods: dict[str, str] = {}
        # Bound pods naming GPUs, by GPU name: a GPU that appears after its pods (watch order)
        # re-reads them, so their share of it is counted.
        self.holders: dict[str, set[str]] = {}
        self.bound: dict[str, Pod] = {}
        # What each node has left for pods (allocatable − its pods' requests), fed to the allocator.
        self.hosts = HostRoom()
        # Expansion reservations: AutoSelect's NodeClaims by name, each node's GPU objects' creation
        # (when its GPUs were reported), and the GPU pods not bound yet (whom a node may be for).
        self.expansions: dict[str, Reservation] = {}
        self.gpus_created: dict[str, dict[str, datetime]] = {}  # node → GPU object → its creation
        self.gpu_nodes: dict[str, str] = {}  # GPU object → its node
        self.waiting: dict[str, Pod] = {}
        self.replicas = ReplicaLedger(settle=self.settings.replica_settle)
        self.gangs = GangGate()  # gang-min-members: all-or-nothing binding, with gang-timeout
        self.synced = threading.Event()
        self.taints: TaintKeeper | None = None
        if self.settings.progressive_migration and tainter is not None:
            self.taints = TaintKeeper(tainter, lock=self.lock, busy_nodes=self.busy_nodes, synced=self.synced)
        self.gpu_labels: UsableGpuLabels | None = None
        if labeller is not None:
            self.gpu_labels = UsableGpuLabels(
                labeller, lock=self.lock, allocator=self.allocator, synced=self.synced
            )

    def busy_nodes(self) -> set[str]:
        """Nodes holding at least one gpupool allocation (call with the lock held)."""
        return {a.node for a in self.allocator.state.allocations.values()}

    def _wake_taints(self) -> None:
        if self.taints is not None:
            self.taints.wake()

    # ---- watched objects ---------------------------------------------------------------------
    @property
    def default_pool(self) -> str:
        return self.settings.default_pool or self.policies.default_pool_marked or ""

    def apply_pool(self, pool: GPUPool, *, deleted: bool = False) -> None:
        oversubscription = None if deleted else oversubscription_of(pool)
        with self.lock:
            self.policies.apply_pool(pool, deleted=deleted)
            self.allocator.pool_modes = self.policies.pool_modes()
            self.allocator.state.set_oversubscription(pool.metadata.name or "", oversubscription)

    def apply_template(self, template: SchedulingConfigTemplate, *, deleted: bool = False) -> None:
        with self.lock:
            self.policies.apply_template(template, deleted=deleted)
            self.allocator.pool_modes = self.policies.pool_modes()

    def apply_quota(self, quota: GPUResourceQuota, *, deleted: bool = False) -> None:
        limits = None if deleted else quota_limits(quota)
        with self.lock:
            self.policies.apply_quota(quota, deleted=deleted)
            self.allocator.set_quota(quota.metadata.namespace or "default", limits)

    def apply_profile(self, profile: WorkloadProfile, *, deleted: bool = False) -> None:
        with self.lock:
            self.policies.apply_profile(profile, deleted=deleted)

    def apply_nodeclaim(self, nodeclaim: KarpenterNodeClaim, *, deleted: bool = False) -> None:
        """An expansion NodeClaim whose node is named reserves it for its pod; any other, none."""
        reservation = None if deleted else reservation_of(nodeclaim)
        with self.lock:
            if reservation is None:
                self.expansions.pop(nodeclaim.name, None)
            else:
                self.expansions[nodeclaim.name] = reservation

    def _note_gpu_created(self, gpu: GPU, deleted: bool) -> None:
        """When each node's GPU objects were created (the first: since when its GPUs are reported)."""
        name = gpu.metadata.name or ""
        previous = self.gpu_nodes.pop(name, None)
        if previous is not None:
            created = self.gpus_created[previous]
            created.pop(name, None)
            if not created:
                del self.gpus_created[previous]
        found = None if deleted else reported_at(gpu)
        if found is not None:
            self.gpu_nodes[name] = found[0]
            self.gpus_created.setdefault(found[0], {})[name] = found[1]

    def apply_gpu(self, gpu: GPU, *, deleted: bool = False) -> None:
        with self.lock:
            self._note_gpu_created(gpu, deleted)
            if self.gpu_labels is not None:
                self.gpu_labels.wake()
            info = None if deleted else gpu_info(gpu)
            name = gpu.metadata.name or ""
            if info is None:
                self.allocator.state.remove_gpu(name)
                self._relayout_now()
                return
            new = name not in self.allocator.state.gpus
            self.allocator.state.upsert_gpu(info)
            if new:
                for key in sorted(self.holders.get(name, ())):
                    self._count_bound(key, self.bound[key])
            self._relayout_now()

    def _relayout_now(self) -> None:
        """After the first sync, rebuild the arrays here (watch thread), not in a filter call."""
        if self.synced.is_set():
            self.allocator.state.ensure_layout()

    def apply_node(self, node: Node, *, deleted: bool = False) -> None:
        """Node labels (node affinity), host memory / disk (VRAM expansion bounds) and allocatable
        CPU and memory (what it has left for pods, with its pods' requests: `hosts`)."""
        name = node.metadata.name or ""
        labels = dict(node.metadata.labels)
        capacity = node.status.capacity
        memory, disk = capacity.get("memory"), capacity.get("ephemeral-storage")
        host = (int(memory.value) if memory else 0, int(disk.value) if disk else 0)
        with self.lock:
            state = self.allocator.state
            if self.taints is not None:
                taints = [t.model_dump(exclude_none=True) for t in node.spec.taints]
                self.taints.observe_node(name, tainted=has_used_by_taint(taints), deleted=deleted)
            if self.gpu_labels is not None:
                self.gpu_labels.observe_node(name, value=labels.get(LABEL_USABLE_GPUS), deleted=deleted)
            if self.hosts.observe_node(node, deleted=deleted) is not None:
                self._apply_room(name)
            if deleted:
                return
            if state.node_labels.get(name) != labels or state.node_host.get(name, (0, 0)) != host:
                state.set_node(name, labels, host_memory=host[0], host_disk=host[1])
                self._relayout_now()

    def apply_pod(self, pod: Pod, *, deleted: bool = False) -> None:
        key = pod_key_of(pod.metadata.namespace, pod.metadata.name or "")
        finished = deleted or pod.status.phase in ("Succeeded", "Failed")
        with self.lock:
            held_before = self.allocator.state.allocations.get(key)
            self._apply_pod(pod, key, finished)
            if self.allocator.state.allocations.get(key) is not held_before:
                self._wake_taints()

    def _apply_pod(self, pod: Pod, key: str, finished: bool) -> None:
        """Pod bookkeeping under the lock: replicas, native GPU pods, what bound pods hold."""
        self.replicas.observe(pod, key, finished=finished)
        self._track_native(pod, key, finished)
        for node in sorted(self.hosts.observe_pod(key, pod, deleted=finished)):
            self._apply_room(node)
        self._forget_bound(key)
        if finished or pod.spec.node_name or not asks_gpupool_for_gpus(pod):
            self.waiting.pop(key, None)
        else:
            self.waiting[key] = pod
        if finished:
            self.gangs.forget(key)
            self.allocator.release(key)
            return
        # Only bound pods hold GPUs here: an annotated but unbound pod is a bind in flight
        # (its reservation is held by `bind`) or one that failed (and was released).
        if ANNOTATION_GPU_IDS not in pod.metadata.annotations or not pod.spec.node_name:
            return
        self.bound[key] = pod
        for name in pod.metadata.annotations[ANNOTATION_GPU_IDS].split(","):
            self.holders.setdefault(name.strip(), set()).add(key)
        self._count_bound(key, pod)

    def _apply_room(self, node: str) -> None:
        """Tell the allocator what `node` has left (unknown when its allocatable is)."""
        room = self.hosts.room(node)
        if room is None:
            self.allocator.state.clear_host_free(node)
        else:
            self.allocator.state.set_host_free(node, *room)

    def _forget_bound(self, key: str) -> None:
        previous = self.bound.pop(key, None)
        if previous is None:
            return
        for name in previous.metadata.annotations.get(ANNOTATION_GPU_IDS, "").split(","):
            holders = self.holders.get(name.strip())
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del self.holders[name.strip()]

    def _count_bound(self, key: str, pod: Pod) -> None:
        try:
            allocation = allocation_from_pod(pod, self.allocator.state.gpus, default_pool=self.default_pool)
        except RequestError:
            return
        if allocation is not None and self.allocator.state.allocations.get(key) != allocation:
            self.allocator.add_allocation(allocation)

    def _track_native(self, pod: Pod, key: str, finished: bool) -> None:
        holds = any("nvidia.com/gpu" in ct.resources.limits for ct in pod.spec.containers)
        node = pod.spec.node_name
        previous = self.native_pods.pop(key, None)
        if holds and node and not finished:
            self.native_pods[key] = node
        for changed in {previous, node} - {None}:
            assert changed is not None
            count = sum(1 for n in self.native_pods.values() if n == changed)
            self.allocator.state.set_native_gpu_pods(changed, count)

    # ---- requests ------------------------------------------------------------------------
    def filter(self, args: ExtenderArgs) -> dict[str, Any]:
        with self.lock:
            if self.gangs.sweep(self.allocator):  # a timed-out gang's GPUs are free again
                self._wake_taints()
            return handle_filter(
                self.allocator, args, default_pool=self.default_pool, reservations=self._reservations()
            )

    def _reservations(self) -> dict[str, tuple[Reservation, GpuRequest]]:
        """The reservations holding now, by node, each with its waiting pod's request (call with
        the lock held): its pod not bound, its node's GPUs reported under PLACEMENT_GRACE ago."""
        now = self._now()
        held: dict[str, tuple[Reservation, GpuRequest]] = {}
        for _, reservation in sorted(self.expansions.items()):
            pod = self.waiting.get(reservation.pod)
            created = self.gpus_created.get(reservation.node)
            if pod is None or reservation.node in held:
                continue
            if not holding(min(created.values()) if created else None, now=now):
                continue
            try:
                request = request_from_pod(pod, default_pool=self.default_pool)
            except RequestError:
                continue  # a pod that cannot be placed reserves nothing
            held[reservation.node] = (reservation, request)
        return held

    def prioritize(self, args: ExtenderArgs) -> list[dict[str, Any]]:
        with self.lock:
            return handle_prioritize(self.allocator, args, default_pool=self.default_pool)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> Allocation | None:
        """Reserve, annotate, bind; BindFailed (state unchanged) when any step fails."""
        try:
            pod = self.writer.read_pod(namespace, name)
        except (TypeError, AttributeError, NameError, AssertionError):
            raise  # a bug, not a failed read: surface it with its traceback
        except Exception as exc:  # the writer port's failures are untyped (conflict, not found, …)
            raise BindFailed(f"cannot read pod {namespace}/{name}: {exc}") from exc
        if uid and (pod.get("metadata") or {}).get("uid") not in (None, "", uid):
            raise BindFailed(f"pod {namespace}/{name} was replaced (uid {uid} is gone)")
        scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        if scheduler != SCHEDULER_NAME:
            # kube-scheduler only asks to bind pods of its own profile: anything else is a caller
            # on the loopback port (a port-forward) trying to place a pod it should not.
            raise BindFailed(f"pod {namespace}/{name} is scheduled by {scheduler}, not {SCHEDULER_NAME}")
        with self.lock:
            if self.gangs.sweep(self.allocator):  # a timed-out gang's GPUs are free again
                self._wake_taints()
            held_before = self.allocator.state.allocations.get(f"{namespace}/{name}")
            try:
                allocation = reserve_for_bind(
                    self.allocator,
                    pod,
                    node,
                    default_pool=self.default_pool,
                    reservations=self._reservations(),
                )
            except (AllocationError, RequestError) as exc:
                raise BindFailed(str(exc)) from exc
            if allocation is not None:
                try:
                    self.gangs.check(pod, f"{namespace}/{name}")
                except BindFailed:  # a short gang keeps its GPUs (the node is busy) and binds later
                    self._wake_taints()
                    raise
        fresh = allocation is not None and allocation is not held_before
        annotated = False
        try:
            if allocation is not None:  # gpu-ids and the record the device plugin and agent honour
                record = record_annotations(Pod.model_validate(pod), node, allocation.gpus)
                self.writer.annotate_pod(namespace, name, record)
                annotated = True
            self.writer.bind_pod(namespace, name, uid, node)
        except Exception as exc:  # any failure undoes the reservation; the writer's are untyped
            if fresh and allocation is not None:
                with self.lock:
                    self.allocator.release(allocation.key)
                if annotated:
                    self._forget_annotation(namespace, name)
            if isinstance(exc, TypeError | AttributeError | NameError | AssertionError):
                raise  # a bug, not a failed write: surface it with its traceback
            raise BindFailed(f"binding {namespace}/{name} to {node} failed: {exc}") from exc
        finally:
            self._wake_taints()
        return allocation

    def _forget_annotation(self, namespace: str, name: str) -> None:
        """Best effort: the GPUs named on a pod whose bind failed are no longer its own."""
        try:
            self.writer.annotate_pod(namespace, name, dict.fromkeys(SCHEDULER_OWNED))
        except Exception as exc:  # the pod may be gone; unbound pods' annotations are ignored anyway
            log.info("cannot clear the GPU annotation of %s/%s after a failed bind: %s", namespace, name, exc)

    def admission_context(self, pod: Mapping[str, Any], namespace: str) -> AdmissionContext:
        with self.lock:
            owner = _owner_of(pod)
            return AdmissionContext(
                pools=dict(self.policies.pools),
                default_pool=self.default_pool or None,
                quota=self.policies.quotas.get(namespace),
                quota_usage=usage_copy(self.allocator, namespace),
                largest_gpu=self._largest_gpu(),
                progressive_migration=self.settings.progressive_migration,
                migrated_replicas=self.replicas.migrated(owner),
                workload_profiles=self.policies.profiles_in(namespace),
            )

    def _largest_gpu(self) -> tuple[int, int]:
        """(milli-TFLOPS, VRAM bytes) of the largest GPU known (call with the lock held)."""
        gpus = self.allocator.state.gpus.values()
        return (
            max((g.tflops_capacity for g in gpus), default=0),
            max((g.vram_capacity for g in gpus), default=0),
        )

    def admit(self, pod: Mapping[str, Any], namespace: str, *, record: bool = True) -> Mutation:
        """The webhook's mutation (Denial propagates), counting the replicas the watch shows; `record`
        marks a moved replica's owner unsettled until the watch shows it (not for dry runs)."""
        mutation = self.try_admit(pod, namespace, record=record, settled=True)
        assert mutation is not None
        return mutation

    def try_admit(
        self, pod: Mapping[str, Any], namespace: str, *, record: bool = True, settled: bool = False
    ) -> Mutation | None:
        """`admit`, or None (nothing decided, nothing recorded) while the pod asks for `enabled-replicas`
        and a replica of its owner the webhook let move has not appeared in the watch yet — unless
        `settled` (the caller waited long enough: decide with what the watch shows)."""
        limited = ANNOTATION_ENABLED_REPLICAS in ((pod.get("metadata") or {}).get("annotations") or {})
        owner = _owner_of(pod) if limited else None
        with self.lock:
            if owner is not None and not settled and self.replicas.unsettled(owner):
                return None
            mutation = mutate_pod(pod, namespace, self.admission_context(pod, namespace))
            if record and mutation.migrated and owner is not None:
                self.replicas.admitted(owner)
            return mutation

    def simulate(self, pod: Mapping[str, Any], namespace: str) -> tuple[Mutation, Simulation]:
        """Mutate as the webhook would, then place without reserving; Denial / RequestError propagate."""
        mutation = self.admit(pod, namespace, record=False)
        if not mutation.migrated:
            why = "; ".join(mutation.notes) or "it is not labelled tensor-fusion.ai/enabled=true"
            raise RequestError(f"the webhook would leave this pod on nvidia.com/gpu: {why}")
        patched = apply_annotation_patch(pod, mutation.patch, namespace=namespace)
        request = request_from_pod(Pod.model_validate(patched), default_pool=self.default_pool)
        with self.lock:
            return mutation, self.allocator.simulate(request)


def _owner_of(pod: Mapping[str, Any]) -> str | None:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return next((str(o["uid"]) for o in owners if o.get("controller") and o.get("uid")), None)
