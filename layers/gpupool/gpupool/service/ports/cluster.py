"""The Kubernetes port, split by role: each caller asks for the objects it works with.

Role: one Protocol per role — `TensorFusionClusters`, `Pools`, `NodeClasses`, `Claims`,
`Nodes`, `GPUs`, `Pods`, `Events`, `Leases` — and `Cluster`, all of them together, which the
implementations serve (`adapters.kube.cluster.KubeCluster`, the per-invocation cache
`service.invocation_cluster.InvocationCluster`, the in-memory double
`testing.memory_ports.MemoryCluster`); `CLUSTER_ROLES` lists the roles and `CLUSTER_METHODS`
their methods, for the contract test that holds every implementation to every method of every
role. A function that needs one role
is typed with it; one that needs several takes `Cluster`.

Shared contract: reads return pydantic models with `metadata.resourceVersion` set; writes that
take a `resource_version` raise Conflict when it is stale; cluster-scoped tensor-fusion.ai
objects are addressed by name. A list returns the objects as the API server holds them when it
answers (an adapter may keep what it listed and bring it up to date incrementally; what it
returns is what a list at that moment returns). Each method's docstring names the domain
errors (`gpupool.service.errors`) it raises.

Must not: contain logic, import an SDK or the Kubernetes client, or know about dry-run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Protocol

# Imported at run time, not only for the type checker: a double may read a method's types
# (`typing.get_type_hints`) to derive it (`testing.memory_ports.cluster`).
from gpupool.core.model.cluster import TensorFusionCluster, TensorFusionClusterStatus
from gpupool.core.model.foreign import Node, Pod, PodDisruptionBudget
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool, GPUPoolStatus
from gpupool.service.ports.arguments import ClaimMetadataPatch, NodePatch, ObjectEvent

__all__ = [
    "CLUSTER_METHODS",
    "CLUSTER_ROLES",
    "Claims",
    "Cluster",
    "Events",
    "GPUs",
    "Leases",
    "NodeClasses",
    "Nodes",
    "Pods",
    "Pools",
    "TensorFusionClusters",
]


class TensorFusionClusters(Protocol):
    """The TensorFusionClusters: read, and their status written (the connection check's
    conditions)."""

    def list_clusters(self) -> list[TensorFusionCluster]:
        """Every TensorFusionCluster (all namespaces). Raises: Throttled, PermanentError."""
        ...

    def update_cluster_status(
        self, name: str, status: TensorFusionClusterStatus, *, resource_version: str
    ) -> TensorFusionCluster:
        """Replace a TensorFusionCluster's status through the status subresource.
        Raises: Conflict (stale), NotFound."""
        ...


class Pools(Protocol):
    """The GPUPools: read, created from a cluster's spec, their spec, annotations and status
    written."""

    def list_pools(self) -> list[GPUPool]:
        """Every GPUPool. Raises: Throttled, PermanentError."""
        ...

    def get_pool(self, name: str) -> GPUPool:
        """One GPUPool, freshly read (used to re-validate before destroying).
        Raises: NotFound, Throttled, PermanentError."""
        ...

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


class NodeClasses(Protocol):
    """The GPUNodeClasses a Provisioned pool launches from (read only)."""

    def list_node_classes(self) -> list[GPUNodeClass]:
        """Every GPUNodeClass. Raises: Throttled, PermanentError."""
        ...


class Claims(Protocol):
    """The GPUNodeClaims: the nodes gpupool asked for, each followed from creation to its
    finalizer's removal."""

    def list_claims(self) -> list[GPUNodeClaim]:
        """Every GPUNodeClaim, those being deleted included. Raises: Throttled, PermanentError."""
        ...

    def get_claim(self, name: str) -> GPUNodeClaim:
        """One GPUNodeClaim, freshly read. Raises: NotFound, Throttled, PermanentError."""
        ...

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

    def patch_claim_metadata(self, name: str, patch: ClaimMetadataPatch) -> GPUNodeClaim:
        """Set/remove labels and annotations (None removes a key) and replace the finalizers, as
        `patch` says, guarded by its resourceVersion; once a deleting claim's last finalizer is
        gone the claim is gone. Raises: Conflict (stale), NotFound."""
        ...

    def delete_claim(self, name: str) -> None:
        """Request deletion (sets deletionTimestamp; the finalizer keeps it until the instance
        is gone). Idempotent: already deleting is success. Raises: NotFound."""
        ...


class Nodes(Protocol):
    """Core v1 Nodes: read (whole or as `kubectl get nodes` rows), labelled and cordoned."""

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

    def patch_node(self, name: str, patch: NodePatch) -> None:
        """Set/remove node labels and annotations (a None value removes) and/or cordon
        (`unschedulable=True`), as `patch` says; a patch that sets nothing sends nothing.
        Raises: NotFound."""
        ...


class GPUs(Protocol):
    """What TensorFusion's node agents publish: GPUNodes and GPUs (read only)."""

    def list_gpu_nodes(self, *, summary: bool = False) -> list[GPUNode]:
        """Every GPUNode, in name order. `summary`: each holds what its row in `kubectl get
        gpunodes` holds and nothing more — its metadata, and in its status the phase, total and
        available TFLOPS and VRAM and the GPU count (no status when it has none); the spec and
        the rest of the status are empty. Raises: Throttled, PermanentError."""
        ...

    def list_gpus(self) -> list[GPU]:
        """Every GPU. Raises: Throttled, PermanentError."""
        ...


class Pods(Protocol):
    """Pods, the PodDisruptionBudgets that guard them, and their eviction."""

    def list_pods(self, *, node_name: str | None = None, phase: str | None = None) -> list[Pod]:
        """Pods in all namespaces, in (namespace, name) order, picked by the API server's field
        selectors: `node_name` — those bound to that node (`spec.nodeName`; "" — those bound to no
        node), `phase` — those in that `status.phase` (the API server sets Pending on create).
        Raises: Throttled, PermanentError."""
        ...

    def list_pod_disruption_budgets(self) -> list[PodDisruptionBudget]:
        """Every PodDisruptionBudget, in all namespaces. Raises: Throttled, PermanentError."""
        ...

    def evict_pod(self, namespace: str, name: str) -> None:
        """Evict a pod through the eviction API (PodDisruptionBudgets honoured).
        Raises: Throttled (a PDB blocks it now, HTTP 429), NotFound (already gone)."""
        ...


class Events(Protocol):
    """Core v1 Events about the objects gpupool acts on."""

    def record_event(self, event: ObjectEvent) -> None:
        """Record a core v1 Event about an object (`involvedObject` kind/name/namespace); the
        same event recorded again (object, type, reason, message) raises its count instead of
        adding another. Best effort for callers; raises PermanentError only on an invalid event."""
        ...


class Leases(Protocol):
    """`coordination.k8s.io` Leases: one invocation at a time acts on a pool."""

    def try_acquire_lease(self, name: str, *, holder: str, now: datetime, duration: timedelta) -> bool:
        """Take the Lease `name` for `holder` until `now + duration`.

        True when taken (created, renewed by the same holder, or taken over after expiry);
        False when another holder has it and it has not expired, or when a concurrent writer
        won the resourceVersion race. Never raises Conflict."""
        ...

    def release_lease(self, name: str, *, holder: str) -> None:
        """Give the Lease back if `holder` still holds it; otherwise do nothing. Never raises
        NotFound or Conflict."""
        ...


class Cluster(TensorFusionClusters, Pools, NodeClasses, Claims, Nodes, GPUs, Pods, Events, Leases, Protocol):
    """Every role at once: what an implementation of the Kubernetes port serves, and what a
    caller that needs several roles is given."""


CLUSTER_ROLES: tuple[type, ...] = (
    TensorFusionClusters,
    Pools,
    NodeClasses,
    Claims,
    Nodes,
    GPUs,
    Pods,
    Events,
    Leases,
)
# Every method of every role, by name.
CLUSTER_METHODS: frozenset[str] = frozenset(
    name
    for role in CLUSTER_ROLES
    for name, member in vars(role).items()
    if callable(member) and name[0] != "_"
)
