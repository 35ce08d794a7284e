"""Ports: the small capabilities the service needs from the outside world.

Role: `Compute` (the nodes launched for claims: cloud instances in Provisioned mode, Karpenter
NodeClaims in Karpenter mode — after Karpenter's `CloudProvider`: create, get, list, delete),
`CloudProvider` (a cloud behind that one interface, named: each cloud's package under
`gpupool.adapters` implements it, and the service speaks to a cloud through nothing else),
`Cluster` (Kubernetes objects), `Clock` (time) as Protocols.
Each method's docstring is its contract: what it does, what it returns, and which domain
errors (`gpupool.service.errors`) it raises. Adapters (`gpupool.adapters`) implement them;
service tests use in-memory fakes (`tests/service/fakes.py`).

Must not: contain logic, import an SDK, or know about dry-run (the executor never calls a
port in dry-run; adapters never check for it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal, Protocol

from gpupool.core.model.instance import LaunchTemplate, ManagedInstance
from gpupool.core.planning.plan import OfferingRef

if TYPE_CHECKING:
    from gpupool.core.model.cluster import TensorFusionCluster, TensorFusionClusterStatus
    from gpupool.core.model.foreign import Node, Pod, PodDisruptionBudget
    from gpupool.core.model.node import GPU, GPUNode
    from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
    from gpupool.core.model.nodeclass import GPUNodeClass
    from gpupool.core.model.pool import GPUPool, GPUPoolStatus

__all__ = ["Clock", "CloudProvider", "Cluster", "Compute", "EventType"]

EventType = Literal["Normal", "Warning"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC. Never raises."""
        ...


class Compute(Protocol):
    """The nodes launched for claims, by one provisioning mode: cloud instances (Provisioned:
    only those tagged `managed-by=tensor-fusion.ai` and `tensor-fusion.ai/cluster=<cluster>` are
    ever reported or touched) or karpenter.sh NodeClaims (Karpenter: only those labelled
    `tensor-fusion.ai/node-provisioner`). Ids are the Compute's own: each reports and acts on
    the ids it gave out, and leaves any other id alone."""

    def launch(
        self,
        claim: GPUNodeClaim,
        template: LaunchTemplate,
        offering: OfferingRef,
        *,
        client_token: str,
    ) -> str:
        """Start the node of `claim` from `template` and return its id.

        Provisioned (`template` a GPUNodeClass): uses everything in it (image, subnets, security
        groups, profile, metadata options, disks, tags, userData with `__GPU_NODE_RESOURCE_NAME__`
        replaced by the claim name), places the instance per `offering` (type, zone,
        spot/on-demand), tags it (DESIGN §2), and sends `client_token` so a repeated call returns
        the same instance where the cloud honours it. Karpenter (`template` a NodeClaimTemplate):
        creates the claim's NodeClaim from it, owned by the claim, once the node class it names
        exists; a NodeClaim of that name the claim owns already is adopted. Does not look for an
        existing instance first: callers call `find_by_claim` before.

        Raises: CapacityUnavailable (no capacity for this offering), Throttled, Conflict (lost a
        race with another writer of the same name: re-decide), PermanentError (invalid
        parameters, unauthorized, a missing node class, a template of the other mode: the claim
        should fail with the message).
        """
        ...

    def launchable_zones(self, template: LaunchTemplate) -> frozenset[str] | None:
        """The zones `template` can place a node in (a GPUNodeClass: those of its subnets); None
        when any zone will do (no subnet selector: the account's default subnet of each zone;
        Karpenter: its node class picks the subnet).

        Raises: Throttled, PermanentError (unauthorized)."""
        ...

    def find_by_claim(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        """The live (not terminated) node launched for `claim`: the managed instance tagged
        `tensor-fusion.ai/node-name=<claim name>`, or the NodeClaim of the claim's name.

        Returns None when there is none; when several exist (a cloud that ignored the client
        token), the oldest. Raises: Throttled, PermanentError (also when a NodeClaim of the
        claim's name is owned by another object: it is never adopted).
        """
        ...

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        """The managed instances among `instance_ids` (terminated ones included while the cloud
        still reports them; a NodeClaim that is gone reads as terminated); unknown, untagged or
        foreign ids are left out, never an error. Raises: Throttled, PermanentError."""
        ...

    def terminate(self, instance_id: str) -> None:
        """Terminate a managed instance (delete a NodeClaim). Idempotent: one already terminated
        or gone is success. Raises: PermanentError when the instance is not ours (never
        terminated), Throttled."""
        ...

    def list_managed(self) -> list[ManagedInstance]:
        """Every managed instance of this cluster (for the orphan sweep and bind); a cloud reports
        its live ones, Karpenter every NodeClaim of a claim (those being deleted included).
        Raises: Throttled, PermanentError."""
        ...

    def check_connection(self) -> None:
        """Prove the credentials reach the instance API with a call that changes nothing (AWS:
        DescribeInstances with DryRun; Alibaba: DescribeRegions; Karpenter: list NodeClaims).
        Returns None when it works. Raises: PermanentError (unauthorized, bad credentials,
        unknown region, no NodeClaim CRD), Throttled (unreachable, rate limited) — their message
        is what the cluster's condition shows."""
        ...


class CloudProvider(Compute, Protocol):
    """A cloud behind one interface, as Karpenter's `CloudProvider`: the `Compute` of
    Provisioned mode, and its name. `gpupool.adapters.<cloud>.compute` implements it; the
    service never names a cloud or its API (docs/CONTRIBUTING.md lists what a new one adds)."""

    @property
    def vendor(self) -> str:
        """The TensorFusionCluster `spec.computingVendor.type` this cloud serves (one of
        `gpupool.core.model.cloud.CLOUDS`)."""
        ...

    @property
    def connection_call(self) -> str:
        """The call `check_connection` makes, as the cluster's CloudVendorConnectionReady
        condition names it (e.g. "DescribeInstances")."""
        ...


class Cluster(Protocol):
    """Kubernetes objects. Reads return pydantic models with `metadata.resourceVersion` set;
    writes that take `resource_version` raise Conflict when it is stale. Cluster-scoped
    tensor-fusion.ai objects are addressed by name. A list returns the objects as the API server
    holds them when it answers (an adapter may keep what it listed and bring it up to date
    incrementally; what it returns is what a list at that moment returns)."""

    # ---- reads ---------------------------------------------------------------------------
    def list_clusters(self) -> list[TensorFusionCluster]:
        """Every TensorFusionCluster (all namespaces). Raises: Throttled, PermanentError."""
        ...

    def list_pools(self) -> list[GPUPool]:
        """Every GPUPool. Raises: Throttled, PermanentError."""
        ...

    def get_pool(self, name: str) -> GPUPool:
        """One GPUPool, freshly read (used to re-validate before destroying).
        Raises: NotFound, Throttled, PermanentError."""
        ...

    def list_node_classes(self) -> list[GPUNodeClass]:
        """Every GPUNodeClass. Raises: Throttled, PermanentError."""
        ...

    def list_claims(self) -> list[GPUNodeClaim]:
        """Every GPUNodeClaim, those being deleted included. Raises: Throttled, PermanentError."""
        ...

    def get_claim(self, name: str) -> GPUNodeClaim:
        """One GPUNodeClaim, freshly read. Raises: NotFound, Throttled, PermanentError."""
        ...

    def list_nodes(self, *, summary: bool = False, labels: Mapping[str, str] | None = None) -> list[Node]:
        """Core v1 Nodes, in name order. `labels`: only those carrying every one of these labels
        (an equality label selector, applied by the API server). `summary`: each Node holds what
        its row in `kubectl get nodes` holds and nothing more — its metadata (name, uid,
        resourceVersion, labels, annotations, owner references, creation and deletion
        timestamps), `spec.unschedulable`, and one `Ready` condition whose status is "True" when
        the node is Ready and "False" when its Ready condition is False or Unknown (no condition
        when it reports none); taints, capacity, addresses and the rest are empty.
        Raises: Throttled, PermanentError."""
        ...

    def list_gpu_nodes(self, *, summary: bool = False) -> list[GPUNode]:
        """Every GPUNode, in name order. `summary`: each holds what its row in `kubectl get
        gpunodes` holds and nothing more — its metadata, and in its status the phase, total and
        available TFLOPS and VRAM and the GPU count (no status when it has none); the spec and
        the rest of the status are empty. Raises: Throttled, PermanentError."""
        ...

    def list_gpus(self) -> list[GPU]:
        """Every GPU. Raises: Throttled, PermanentError."""
        ...

    def list_pod_disruption_budgets(self) -> list[PodDisruptionBudget]:
        """Every PodDisruptionBudget, in all namespaces. Raises: Throttled, PermanentError."""
        ...

    def list_pods(self, *, node_name: str | None = None, phase: str | None = None) -> list[Pod]:
        """Pods in all namespaces, in (namespace, name) order, picked by the API server's field
        selectors: `node_name` — those bound to that node (`spec.nodeName`; "" — those bound to no
        node), `phase` — those in that `status.phase` (the API server sets Pending on create).
        Raises: Throttled, PermanentError."""
        ...

    def update_cluster_status(
        self, name: str, status: TensorFusionClusterStatus, *, resource_version: str
    ) -> TensorFusionCluster:
        """Replace a TensorFusionCluster's status through the status subresource.
        Raises: Conflict (stale), NotFound."""
        ...

    # ---- pools ---------------------------------------------------------------------------
    def create_pool(self, pool: GPUPool) -> GPUPool:
        """Create a GPUPool (used to materialise TensorFusionCluster.spec.gpuPools).
        Raises: AlreadyExists, PermanentError (invalid object)."""
        ...

    def replace_pool_spec(self, pool: GPUPool, *, resource_version: str) -> GPUPool:
        """Replace a GPUPool's labels, annotations and spec (status untouched).
        Raises: Conflict (stale), NotFound, PermanentError."""
        ...

    def patch_pool_annotations(
        self, name: str, annotations: Mapping[str, str | None], *, resource_version: str
    ) -> GPUPool:
        """Set (value) or remove (None) annotations of a GPUPool, guarded by resourceVersion.
        Raises: Conflict (stale), NotFound."""
        ...

    def update_pool_status(self, name: str, status: GPUPoolStatus, *, resource_version: str) -> GPUPool:
        """Replace a GPUPool's status through the status subresource.
        Raises: Conflict (stale), NotFound."""
        ...

    # ---- claims --------------------------------------------------------------------------
    def create_claim(self, claim: GPUNodeClaim) -> GPUNodeClaim:
        """Create a GPUNodeClaim (labels, annotations and finalizer as given; status as given
        where the server accepts it, else set it next with update_claim_status). Returns the
        stored object with uid and resourceVersion. Raises: AlreadyExists, PermanentError."""
        ...

    def update_claim_status(
        self, name: str, status: GPUNodeClaimStatus, *, resource_version: str
    ) -> GPUNodeClaim:
        """Replace a claim's status through the status subresource.
        Raises: Conflict (stale), NotFound."""
        ...

    def patch_claim_metadata(
        self,
        name: str,
        *,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
        finalizers: Sequence[str] | None = None,
        resource_version: str,
    ) -> GPUNodeClaim:
        """Set/remove labels and annotations (None removes a key); `finalizers` replaces the list.
        Raises: Conflict (stale), NotFound."""
        ...

    def delete_claim(self, name: str) -> None:
        """Request deletion (sets deletionTimestamp; the finalizer keeps it until the instance
        is gone). Idempotent: already deleting is success. Raises: NotFound."""
        ...

    # ---- nodes and pods ------------------------------------------------------------------
    def patch_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str | None] | None = None,
        unschedulable: bool | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        """Set/remove node labels and annotations (a None value removes) and/or cordon
        (`unschedulable=True`). Raises: NotFound."""
        ...

    def evict_pod(self, namespace: str, name: str) -> None:
        """Evict a pod through the eviction API (PodDisruptionBudgets honoured).
        Raises: Throttled (a PDB blocks it now, HTTP 429), NotFound (already gone)."""
        ...

    # ---- events and coordination ---------------------------------------------------------
    def record_event(
        self,
        *,
        kind: str,
        name: str,
        namespace: str | None,
        event_type: EventType,
        reason: str,
        message: str,
    ) -> None:
        """Record a core v1 Event about an object (`involvedObject` kind/name/namespace); the
        same event recorded again (object, type, reason, message) raises its count instead of
        adding another. Best effort for callers; raises PermanentError only on an invalid event."""
        ...

    def try_acquire_lease(self, name: str, *, holder: str, now: datetime, duration: timedelta) -> bool:
        """Take the `coordination.k8s.io` Lease `name` for `holder` until `now + duration`.

        True when taken (created, renewed by the same holder, or taken over after expiry);
        False when another holder has it and it has not expired, or when a concurrent writer
        won the resourceVersion race. Never raises Conflict."""
        ...

    def release_lease(self, name: str, *, holder: str) -> None:
        """Give the Lease back if `holder` still holds it; otherwise do nothing. Never raises
        NotFound or Conflict."""
        ...
