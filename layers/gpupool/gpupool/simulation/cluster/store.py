"""What the simulated cluster's members read and write, and its in-memory backing.

Role: `ClusterStore` is the one small interface the simulated kubelet, node agent and Karpenter
(`kubelet`, `instance_nodes`, `karpenter`) write through: typed objects of the kinds they touch
(`Node`, `Pod`, `GPUNode`, `GPU`, `GPUNodeClaim`, karpenter.sh `NodeClaim`) read, listed in name
order, created, their status written (the status subresource), a NodeClaim's labels merged (what
Karpenter launched), deleted, and a deleting NodeClaim let go once Karpenter's finalizer is done.
It has two backings, so the members are written once:
- `MemoryStore` (here): the in-memory ports — `MemoryCluster` for the Kubernetes objects,
  `MemoryKarpenter` for NodeClaims — the typed objects stored as they are, with no encoding,
  as `gpupool simulate capacity` needs to replay days of demand in a minute or two;
- `JsonStore` (`json_store`): the same objects as raw JSON through an `ObjectStore` — the
  embedded API server in process, or a running sandbox over HTTP — for `gpupool demo`.

Must not: decide anything, or reach a real cluster (the JSON backing's `ObjectStore` is given).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.service.errors import NotFound
from gpupool.testing.memory_ports import MemoryCluster, MemoryKarpenter

__all__ = ["ClusterObject", "ClusterStore", "MemoryStore", "ObjectT"]

ClusterObject = Node | Pod | GPUNode | GPU | GPUNodeClaim | KarpenterNodeClaim
ObjectT = TypeVar("ObjectT", Node, Pod, GPUNode, GPU, GPUNodeClaim, KarpenterNodeClaim)


class ClusterStore(Protocol):
    def get(self, kind: type[ObjectT], name: str, *, namespace: str = "") -> ObjectT | None:
        """The object, or None when there is none."""
        ...

    def list(self, kind: type[ObjectT]) -> list[ObjectT]:
        """Every object of `kind` (all namespaces), by namespace and name."""
        ...

    def create(self, obj: ClusterObject) -> None:
        """Create `obj`; its status, if any, is written after it (the status subresource)."""
        ...

    def write_status(self, obj: ClusterObject) -> None:
        """Replace the status of the stored object named like `obj` with `obj.status`."""
        ...

    def merge_labels(self, kind: type[KarpenterNodeClaim], name: str, labels: dict[str, str]) -> None:
        """Merge `labels` into a NodeClaim's labels (Karpenter records what it launched there)."""
        ...

    def delete(self, kind: type[ClusterObject], name: str, *, namespace: str = "") -> bool:
        """Delete (or, where a finalizer holds it, mark deleting); False when it was gone."""
        ...

    def finish_deletion(self, kind: type[KarpenterNodeClaim], name: str) -> None:
        """Karpenter's finalizer is done: a NodeClaim being deleted goes."""
        ...


_KINDS: dict[type[ClusterObject], str] = {
    Node: "Node",
    Pod: "Pod",
    GPUNode: "GPUNode",
    GPU: "GPU",
    GPUNodeClaim: "GPUNodeClaim",
}


class MemoryStore:
    """The members' objects in the in-memory ports (names are unique per kind there, so the
    namespace of a Pod is kept on the object but not needed to find it)."""

    def __init__(self, cluster: MemoryCluster, karpenter: MemoryKarpenter | None = None) -> None:
        self.cluster = cluster
        self.karpenter = karpenter

    def _nodeclaims(self) -> MemoryKarpenter:
        if self.karpenter is None:
            raise TypeError("this store has no Karpenter: give MemoryStore a MemoryKarpenter")
        return self.karpenter

    def get(self, kind: type[ObjectT], name: str, *, namespace: str = "") -> ObjectT | None:
        if kind is KarpenterNodeClaim:
            return self._nodeclaims().nodeclaims.get(name)  # type: ignore[return-value]
        found: ObjectT | None = self.cluster.objects[_KINDS[kind]].get(name)
        return found

    def list(self, kind: type[ObjectT]) -> list[ObjectT]:
        if kind is KarpenterNodeClaim:
            karpenter = self._nodeclaims()
            with karpenter.lock:
                return sorted(karpenter.nodeclaims.values(), key=lambda n: n.name)  # type: ignore[arg-type]
        listed: list[ObjectT] = self.cluster.all(_KINDS[kind])
        return listed

    def create(self, obj: ClusterObject) -> None:
        if isinstance(obj, KarpenterNodeClaim):
            self._nodeclaims().create_nodeclaim(obj)
        else:
            self.cluster.add(obj)

    def write_status(self, obj: ClusterObject) -> None:
        if isinstance(obj, KarpenterNodeClaim):
            karpenter = self._nodeclaims()
            with karpenter.lock:
                current = karpenter.nodeclaims.get(obj.name)
                if current is None:
                    raise NotFound(f"NodeClaim {obj.name} not found")
                karpenter.nodeclaims[obj.name] = current.model_copy(update={"status": obj.status})
        else:
            with self.cluster.lock:
                current = self.cluster.objects[obj.kind].get(obj.name)
                if current is None:
                    raise NotFound(f"{obj.kind} {obj.name} not found")
                self.cluster.add(current.model_copy(update={"status": obj.status}))

    def merge_labels(self, kind: type[KarpenterNodeClaim], name: str, labels: dict[str, str]) -> None:
        karpenter = self._nodeclaims()
        with karpenter.lock:
            current = karpenter.nodeclaims.get(name)
            if current is None:
                raise NotFound(f"NodeClaim {name} not found")
            meta = current.metadata.model_copy(update={"labels": {**current.metadata.labels, **labels}})
            karpenter.nodeclaims[name] = current.model_copy(update={"metadata": meta})

    def delete(self, kind: type[ClusterObject], name: str, *, namespace: str = "") -> bool:
        if kind is KarpenterNodeClaim:
            karpenter = self._nodeclaims()
            if name not in karpenter.nodeclaims:
                return False
            karpenter.delete_nodeclaim(name)
            return True
        with self.cluster.lock:
            return self.cluster.objects[_KINDS[kind]].pop(name, None) is not None

    def finish_deletion(self, kind: type[KarpenterNodeClaim], name: str) -> None:
        self._nodeclaims().finish_deletion([name])
