"""The simulated cluster's objects as raw JSON, through an API server's object access.

Role: `ObjectStore` — list, read, create, merge-patch and delete raw JSON objects by (group,
plural), statuses through the status subresource, as a real controller must (implemented in
process on the embedded API server and over HTTP by `gpupool.sandbox.demo.objects`). `JsonStore`
is the `ClusterStore` backing on it: each typed object is written as the project writes
manifests (`model_dump(by_alias=True, exclude_none=True, mode="json")`) and read back with
`model_validate`, so the members the demo runs are the ones `gpupool simulate capacity` runs.

Must not: decide anything, or open a connection (the `ObjectStore` is given).
"""

from __future__ import annotations

from typing import Any, Protocol

from gpupool.core.model.constants import API_GROUP
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.simulation.cluster.store import ClusterObject, ObjectT

__all__ = ["KARPENTER_GROUP", "JsonObject", "JsonStore", "ObjectStore"]

JsonObject = dict[str, Any]
KARPENTER_GROUP = "karpenter.sh"
KARPENTER_FINALIZER = "karpenter.sh/termination"


class ObjectStore(Protocol):
    def list(self, group: str, plural: str, *, namespace: str | None = None) -> list[JsonObject]: ...

    def get(self, group: str, plural: str, name: str, *, namespace: str = "") -> JsonObject | None: ...

    def create(
        self, group: str, plural: str, body: JsonObject, *, namespace: str | None = None
    ) -> JsonObject: ...

    def patch(
        self, group: str, plural: str, name: str, patch: JsonObject, *, namespace: str = ""
    ) -> JsonObject: ...

    def patch_status(
        self, group: str, plural: str, name: str, status: JsonObject, *, namespace: str = ""
    ) -> JsonObject: ...

    def delete(self, group: str, plural: str, name: str, *, namespace: str = "") -> bool: ...


_RESOURCES: dict[type[ClusterObject], tuple[str, str]] = {
    Node: ("", "nodes"),
    Pod: ("", "pods"),
    GPUNode: (API_GROUP, "gpunodes"),
    GPU: (API_GROUP, "gpus"),
    GPUNodeClaim: (API_GROUP, "gpunodeclaims"),
    KarpenterNodeClaim: (KARPENTER_GROUP, "nodeclaims"),
}


def _json(obj: ClusterObject) -> JsonObject:
    body: JsonObject = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    return body


class JsonStore:
    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects

    def get(self, kind: type[ObjectT], name: str, *, namespace: str = "") -> ObjectT | None:
        found = self.objects.get(*_RESOURCES[kind], name, namespace=namespace)
        return None if found is None else kind.model_validate(found)

    def list(self, kind: type[ObjectT]) -> list[ObjectT]:
        return [kind.model_validate(found) for found in self.objects.list(*_RESOURCES[kind])]

    def create(self, obj: ClusterObject) -> None:
        self.objects.create(*_RESOURCES[type(obj)], _json(obj), namespace=obj.metadata.namespace)

    def write_status(self, obj: ClusterObject) -> None:
        status = _json(obj).get("status") or {}
        self.objects.patch_status(
            *_RESOURCES[type(obj)], obj.name, status, namespace=obj.metadata.namespace or ""
        )

    def merge_labels(self, kind: type[KarpenterNodeClaim], name: str, labels: dict[str, str]) -> None:
        self.objects.patch(*_RESOURCES[kind], name, {"metadata": {"labels": labels}})

    def delete(self, kind: type[ClusterObject], name: str, *, namespace: str = "") -> bool:
        return self.objects.delete(*_RESOURCES[kind], name, namespace=namespace)

    def finish_deletion(self, kind: type[KarpenterNodeClaim], name: str) -> None:
        """Karpenter's finalizer off a NodeClaim being deleted (the sandbox's NodeClaims usually
        carry none, so a deleted one is already gone)."""
        found = self.objects.get(*_RESOURCES[kind], name)
        if found is None or not found["metadata"].get("deletionTimestamp"):
            return
        finalizers = [f for f in found["metadata"].get("finalizers") or [] if f != KARPENTER_FINALIZER]
        self.objects.patch(*_RESOURCES[kind], name, {"metadata": {"finalizers": finalizers or None}})
