"""Raw object access to an API server, for the demo's stories and the simulated cluster's members.

Role: the two implementations of `gpupool.simulation.cluster.json_store.ObjectStore` (list, read,
create, merge-patch and delete raw JSON objects by (group, plural), statuses through the status
subresource as a real controller must): `KubeObjects`, in-process on the embedded
`gpupool.sandbox.kubeapi.ApiOperations` (the demo: no HTTP), and `ClientObjects`, over HTTP with
the official client's `ApiClient` (a running `gpupool sandbox`).

Must not: decide anything, or be used by the service (the service reaches Kubernetes only
through the `Cluster` port and its adapter).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from gpupool.sandbox.kubeapi import ApiOperations
from gpupool.sandbox.kubeapi.errors import ApiError
from gpupool.sandbox.kubeapi.resources import ResourceType
from gpupool.simulation.cluster.json_store import JsonObject

__all__ = ["ClientObjects", "ClientObjectsError", "KubeObjects"]

MERGE_PATCH = "application/merge-patch+json"


class KubeObjects:
    """Raw objects of one embedded cluster, in-process; every method is safe to repeat."""

    def __init__(self, cluster: ApiOperations) -> None:
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


class ClientObjectsError(RuntimeError):
    """The API server refused a request (the message has the method, path and status)."""


class ClientObjects:
    """The same operations over HTTP, with an authenticated `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: Any) -> None:
        self._api = api_client

    @staticmethod
    def _path(group: str, plural: str, namespace: str | None, name: str | None = None) -> str:
        base = "/api/v1" if group == "" else f"/apis/{group}/v1"
        scope = f"/namespaces/{namespace}" if namespace else ""
        return f"{base}{scope}/{plural}" + (f"/{name}" if name else "")

    def _call(
        self, method: str, path: str, body: JsonObject | None = None, *, merge: bool = False
    ) -> JsonObject | None:
        content = MERGE_PATCH if merge else "application/json"
        verb, url, headers, data, post = self._api.param_serialize(
            method=method,
            resource_path=path,
            header_params={"Content-Type": content, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self._api.call_api(
            verb, url, header_params=headers, body=data, post_params=post, _request_timeout=10
        )
        response.read()
        if response.status == 404:
            return None
        if response.status >= 400:
            raise ClientObjectsError(f"{method} {path}: HTTP {response.status}: {response.data[:300]!r}")
        result: JsonObject = json.loads(response.data)
        return result

    def list(self, group: str, plural: str, *, namespace: str | None = None) -> list[JsonObject]:
        found = self._call("GET", self._path(group, plural, namespace)) or {}
        items: list[JsonObject] = found.get("items") or []
        return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def get(self, group: str, plural: str, name: str, *, namespace: str = "") -> JsonObject | None:
        return self._call("GET", self._path(group, plural, namespace or None, name))

    def create(
        self, group: str, plural: str, body: JsonObject, *, namespace: str | None = None
    ) -> JsonObject:
        status = body.get("status")
        created = self._call("POST", self._path(group, plural, namespace), body)
        if created is None:
            raise ClientObjectsError(f"POST {self._path(group, plural, namespace)}: not found")
        if status is not None:
            return self.patch_status(
                group, plural, created["metadata"]["name"], status, namespace=namespace or ""
            )
        return created

    def patch(
        self, group: str, plural: str, name: str, patch: JsonObject, *, namespace: str = ""
    ) -> JsonObject:
        path = self._path(group, plural, namespace or None, name)
        patched = self._call("PATCH", path, patch, merge=True)
        if patched is None:
            raise ClientObjectsError(f"PATCH {path}: not found")
        return patched

    def patch_status(
        self, group: str, plural: str, name: str, status: JsonObject, *, namespace: str = ""
    ) -> JsonObject:
        path = self._path(group, plural, namespace or None, name) + "/status"
        patched = self._call("PATCH", path, {"status": status}, merge=True)
        if patched is None:
            raise ClientObjectsError(f"PATCH {path}: not found")
        return patched

    def delete(self, group: str, plural: str, name: str, *, namespace: str = "") -> bool:
        return self._call("DELETE", self._path(group, plural, namespace or None, name)) is not None
