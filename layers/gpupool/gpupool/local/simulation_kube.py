"""In-process access to the embedded API server's objects, for the simulated cluster members.

Role: `KubeObjects` lists, reads, creates, patches and deletes raw JSON objects of the
embedded `gpupool.local.kubeapi.Cluster` by (group, plural), the way a kubelet, a node agent
or a workload would through the API, without an HTTP client. Statuses are written through
the status subresource, as a real controller must.

Must not: decide anything, or be used by the service (the service reaches Kubernetes only
through the `Cluster` port and its adapter).
"""

from __future__ import annotations

import copy
from typing import Any

from gpupool.local.kubeapi import Cluster
from gpupool.local.kubeapi.errors import ApiError
from gpupool.local.kubeapi.resources import ResourceType

__all__ = ["JsonObject", "KubeObjects"]

JsonObject = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"


class KubeObjects:
    """Raw objects of one embedded cluster; every method is safe to repeat."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def _type(self, group: str, plural: str) -> ResourceType:
        return self._cluster.resolve(group, "v1", plural)

    def list(self, group: str, plural: str, *, namespace: str | None = None) -> list[JsonObject]:
        entries, _ = self._cluster.store.entries(self._type(group, plural), namespace)
        objects = [copy.deepcopy(entry.obj) for entry in entries]
        return sorted(objects, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def get(self, group: str, plural: str, name: str, *, namespace: str = "") -> JsonObject | None:
        try:
            return copy.deepcopy(self._cluster.get(self._type(group, plural), namespace, name))
        except ApiError as error:
            if error.reason == "NotFound":
                return None
            raise

    def create(
        self, group: str, plural: str, body: JsonObject, *, namespace: str | None = None
    ) -> JsonObject:
        """Create `body`; its `status`, if any, is then written through the status subresource."""
        status = body.get("status")
        created = self._cluster.create(self._type(group, plural), namespace, body)
        if status is not None:
            name = created["metadata"]["name"]
            return self.patch_status(group, plural, name, status, namespace=namespace or "")
        return created

    def patch(
        self, group: str, plural: str, name: str, patch: JsonObject, *, namespace: str = ""
    ) -> JsonObject:
        rt = self._type(group, plural)
        return self._cluster.patch(rt, namespace, name, patch, MERGE_PATCH, subresource=None)

    def patch_status(
        self, group: str, plural: str, name: str, status: JsonObject, *, namespace: str = ""
    ) -> JsonObject:
        rt = self._type(group, plural)
        return self._cluster.patch(rt, namespace, name, {"status": status}, MERGE_PATCH, subresource="status")

    def delete(self, group: str, plural: str, name: str, *, namespace: str = "") -> bool:
        """Delete (or mark deleting); False when it was already gone."""
        try:
            self._cluster.delete(self._type(group, plural), namespace, name, {})
        except ApiError as error:
            if error.reason == "NotFound":
                return False
            raise
        return True
