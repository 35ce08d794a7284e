"""The Karpenter port: karpenter.sh/v1 NodeClaims and the node classes they reference.

Role: `KarpenterApi`, a Protocol whose method docstrings are the contract (what each returns,
which domain errors from `gpupool.service.errors` it raises). The Kubernetes adapter
(`gpupool.adapters.kube.karpenter`) implements it; service tests use an in-memory fake.

Must not: contain logic or import an SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool, NodeClassReference

__all__ = ["KarpenterApi"]


class KarpenterApi(Protocol):
    """Karpenter's objects in the cluster. NodeClaims are cluster-scoped and addressed by name."""

    def list_nodeclaims(self, *, ours_only: bool = True) -> list[KarpenterNodeClaim]:
        """The NodeClaims gpupool made for GPUNodeClaims (label `tensor-fusion.ai/node-provisioner`
        present), or every NodeClaim with `ours_only=False` (AutoSelect reads its templates);
        those being deleted included; an empty list when Karpenter's CRDs are not installed.
        Raises: Throttled, PermanentError (forbidden)."""
        ...

    def list_nodepools(self) -> list[KarpenterNodePool]:
        """Every karpenter.sh/v1 NodePool (empty when the CRD is not installed).
        Raises: Throttled, PermanentError (forbidden)."""
        ...

    def get_nodeclaim(self, name: str) -> KarpenterNodeClaim:
        """One NodeClaim, freshly read. Raises: NotFound, Throttled, PermanentError."""
        ...

    def create_nodeclaim(self, nodeclaim: KarpenterNodeClaim) -> KarpenterNodeClaim:
        """Create a NodeClaim as given (labels, annotations, owner references, spec); returns the
        stored object. Raises: AlreadyExists, PermanentError (invalid, forbidden, no CRD), Throttled."""
        ...

    def delete_nodeclaim(self, name: str) -> None:
        """Request deletion (Karpenter's finalizer terminates the node and instance first).
        Idempotent while deleting. Raises: NotFound, Throttled, PermanentError."""
        ...

    def check_access(self) -> None:
        """Prove NodeClaims can be listed (the CRD is installed and readable). Raises:
        PermanentError (CRD missing, forbidden) with a message saying which, Throttled."""
        ...

    def node_class_exists(self, ref: NodeClassReference) -> bool:
        """Whether the node class `ref` names (e.g. karpenter.k8s.aws EC2NodeClass) exists;
        False when its kind is not served at all. Raises: Throttled, PermanentError (forbidden)."""
        ...
