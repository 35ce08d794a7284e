"""`Cluster` on the official Kubernetes client: tensor-fusion.ai objects, nodes, pods, events, leases.

Role: implements `gpupool.service.ports.Cluster` (every role). Requests go through `kube.transport` (the
official client's `ApiClient`, by path); reads come back as gpupool's pydantic models (raw
JSON, so no client model round trip); writes that carry a resourceVersion are
optimistic (a stale one is `Conflict`); statuses go through the status subresource; merge
patches are sent as `application/merge-patch+json` (the client's default is JSON patch).
Every failure is translated by `kube.errors`; a listed object that does not fit its model is
skipped with a Warning Event on it (`kube.reading`), so one bad pool never fails a whole list.
Lists are paged and parsed from the bytes; claims, GPUNodes and node summaries are listed once
per warm function and then kept current by short watches (`kube.reader`); leases and evictions
live in `kube.coordination`.

Must not: decide anything, retry, check dry-run, or build its own client (the wiring passes
an `ApiClient` in, authenticated by `kube.auth`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gpupool.adapters.kube.coordination import Coordination, unreadable_warning
from gpupool.adapters.kube.errors import translated
from gpupool.adapters.kube.reader import KubeReader
from gpupool.adapters.kube.transport import KubeTransport, core_path, group_path
from gpupool.core.model.cluster import TensorFusionCluster, TensorFusionClusterStatus
from gpupool.core.model.constants import API_GROUP
from gpupool.core.model.foreign import Node, Pod, PodDisruptionBudget
from gpupool.core.model.node import GPU, GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim, GPUNodeClaimStatus
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool, GPUPoolStatus
from gpupool.core.model.unreadable import UnreadableObject
from gpupool.service.errors import PermanentError
from gpupool.service.ports import ClaimMetadataPatch, NodePatch, ObjectEvent

__all__ = ["KubeCluster"]

VERSION = "v1"
MERGE_PATCH = "application/merge-patch+json"
# Fields the API server owns; never sent on create or replace.
_SERVER_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "generation", "managedFields", "selfLink")

Model = TypeVar("Model", bound=BaseModel)


def _parse(model: type[Model], raw: Mapping[str, Any], what: str) -> Model:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        name = (raw.get("metadata") or {}).get("name", "?")
        raise PermanentError(f"{what} {name} cannot be read: {error}") from error


def _without_server_fields(manifest: dict[str, Any], *, resource_version: str | None) -> dict[str, Any]:
    metadata = {k: v for k, v in manifest.get("metadata", {}).items() if k not in _SERVER_FIELDS}
    metadata.pop("resourceVersion", None)
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    body = {**manifest, "metadata": metadata}
    body.pop("status", None)
    return body


class KubeCluster:
    """The Cluster port for one Kubernetes cluster.

    `namespace` holds the Leases (Events about cluster-scoped objects go to `default`, as
    kube-apiserver requires); `now` stamps Events (the sandbox passes its simulated clock).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str = "default",
        request_timeout_s: float = 10.0,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._http = KubeTransport(api_client)
        self._namespace = namespace
        self._timeout = request_timeout_s
        self._now = now or (lambda: datetime.now(UTC))
        self._coordination = Coordination(
            api_client, namespace=namespace, request_timeout_s=request_timeout_s
        )
        self._reader = KubeReader(api_client, request_timeout_s=request_timeout_s, report=self._warn)

    # ---- tensor-fusion.ai objects ------------------------------------------------------------
    def _warn(self, unreadable: UnreadableObject) -> None:
        """A Warning Event on an object a list skipped, naming its invalid fields."""
        self.record_event(unreadable_warning(unreadable))

    def _path(self, plural: str, name: str | None = None, sub: str | None = None) -> str:
        return group_path(API_GROUP, VERSION, plural, name, sub=sub)

    def _send(self, action: str, method: str, path: str, **options: Any) -> dict[str, Any]:
        with translated(action):
            return self._http.call_json(method, path, timeout=self._timeout, **options)

    def _get(self, model: type[Model], plural: str, name: str) -> Model:
        return _parse(model, self._send(f"get {plural}/{name}", "GET", self._path(plural, name)), plural)

    def _merge_patch(self, model: type[Model], plural: str, name: str, patch: dict[str, Any]) -> Model:
        raw = self._send(
            f"patch {plural}/{name}", "PATCH", self._path(plural, name), body=patch, content_type=MERGE_PATCH
        )
        return _parse(model, raw, plural)

    def _replace_status(
        self, model: type[Model], plural: str, name: str, status: BaseModel, resource_version: str
    ) -> Model:
        body = {
            "apiVersion": f"{API_GROUP}/{VERSION}",
            "kind": getattr(model, "KIND", ""),
            "metadata": {"name": name, "resourceVersion": resource_version},
            "status": status.model_dump(by_alias=True, exclude_none=True, mode="json"),
        }
        raw = self._send(
            f"replace {plural}/{name}/status", "PUT", self._path(plural, name, "status"), body=body
        )
        return _parse(model, raw, plural)

    def list_clusters(self) -> list[TensorFusionCluster]:
        return self._reader.custom_objects(TensorFusionCluster, TensorFusionCluster.PLURAL)

    def update_cluster_status(
        self, name: str, status: TensorFusionClusterStatus, *, resource_version: str
    ) -> TensorFusionCluster:
        return self._replace_status(
            TensorFusionCluster, TensorFusionCluster.PLURAL, name, status, resource_version
        )

    def list_pools(self) -> list[GPUPool]:
        return self._reader.custom_objects(GPUPool, GPUPool.PLURAL)

    def get_pool(self, name: str) -> GPUPool:
        return self._get(GPUPool, GPUPool.PLURAL, name)

    def list_node_classes(self) -> list[GPUNodeClass]:
        return self._reader.custom_objects(GPUNodeClass, GPUNodeClass.PLURAL)

    def list_claims(self) -> list[GPUNodeClaim]:
        return self._reader.custom_objects(GPUNodeClaim, GPUNodeClaim.PLURAL, kept=True)

    def get_claim(self, name: str) -> GPUNodeClaim:
        return self._get(GPUNodeClaim, GPUNodeClaim.PLURAL, name)

    def list_gpu_nodes(self, *, summary: bool = False) -> list[GPUNode]:
        return self._reader.gpu_nodes(summary=summary)

    def list_gpus(self) -> list[GPU]:
        return self._reader.custom_objects(GPU, GPU.PLURAL)

    # ---- nodes and pods (raw JSON: the client's models are not needed) -------------------------
    def list_nodes(self, *, summary: bool = False, labels: Mapping[str, str] | None = None) -> list[Node]:
        return self._reader.nodes(summary=summary, labels=labels)

    def list_pod_disruption_budgets(self) -> list[PodDisruptionBudget]:
        return self._reader.pod_disruption_budgets()

    def list_pods(self, *, node_name: str | None = None, phase: str | None = None) -> list[Pod]:
        terms = [
            f"{path}={value}"
            for path, value in (("spec.nodeName", node_name), ("status.phase", phase))
            if value is not None
        ]
        return self._reader.pods(field_selector=",".join(terms) or None)

    # ---- pools ---------------------------------------------------------------------------------
    def create_pool(self, pool: GPUPool) -> GPUPool:
        body = _without_server_fields(pool.to_manifest(), resource_version=None)
        raw = self._send(f"create GPUPool {pool.name}", "POST", self._path(GPUPool.PLURAL), body=body)
        return _parse(GPUPool, raw, "GPUPool")

    def replace_pool_spec(self, pool: GPUPool, *, resource_version: str) -> GPUPool:
        # Only labels, annotations and spec change: the rest of the stored object (finalizers,
        # owner references) is kept. The PUT carries the caller's resourceVersion, so a pool
        # changed since the caller read it is a Conflict, whatever this GET saw.
        path = self._path(GPUPool.PLURAL, pool.name)
        current = self._send(f"get GPUPool {pool.name}", "GET", path)
        desired = pool.to_manifest()
        metadata = dict(current.get("metadata") or {})
        metadata["labels"] = desired.get("metadata", {}).get("labels", {})
        metadata["annotations"] = desired.get("metadata", {}).get("annotations", {})
        metadata["resourceVersion"] = resource_version
        body = {**current, "metadata": metadata, "spec": desired.get("spec", {})}
        body.pop("status", None)
        raw = self._send(f"replace GPUPool {pool.name}", "PUT", path, body=body)
        return _parse(GPUPool, raw, "GPUPool")

    def patch_pool_annotations(
        self, name: str, annotations: Mapping[str, str | None], *, resource_version: str
    ) -> GPUPool:
        patch = {"metadata": {"resourceVersion": resource_version, "annotations": dict(annotations)}}
        return self._merge_patch(GPUPool, GPUPool.PLURAL, name, patch)

    def update_pool_status(self, name: str, status: GPUPoolStatus, *, resource_version: str) -> GPUPool:
        return self._replace_status(GPUPool, GPUPool.PLURAL, name, status, resource_version)

    # ---- claims --------------------------------------------------------------------------------
    def create_claim(self, claim: GPUNodeClaim) -> GPUNodeClaim:
        body = _without_server_fields(claim.to_manifest(), resource_version=None)
        raw = self._send(
            f"create GPUNodeClaim {claim.name}", "POST", self._path(GPUNodeClaim.PLURAL), body=body
        )
        return _parse(GPUNodeClaim, raw, "GPUNodeClaim")

    def update_claim_status(
        self, name: str, status: GPUNodeClaimStatus, *, resource_version: str
    ) -> GPUNodeClaim:
        return self._replace_status(GPUNodeClaim, GPUNodeClaim.PLURAL, name, status, resource_version)

    def patch_claim_metadata(self, name: str, patch: ClaimMetadataPatch) -> GPUNodeClaim:
        metadata: dict[str, Any] = {"resourceVersion": patch.resource_version}
        if patch.labels is not None:
            metadata["labels"] = dict(patch.labels)
        if patch.annotations is not None:
            metadata["annotations"] = dict(patch.annotations)
        if patch.finalizers is not None:
            metadata["finalizers"] = list(patch.finalizers)
        return self._merge_patch(GPUNodeClaim, GPUNodeClaim.PLURAL, name, {"metadata": metadata})

    def delete_claim(self, name: str) -> None:
        self._send(f"delete GPUNodeClaim {name}", "DELETE", self._path(GPUNodeClaim.PLURAL, name))

    # ---- nodes, pods, events, leases -----------------------------------------------------------
    def patch_node(self, name: str, patch: NodePatch) -> None:
        body: dict[str, Any] = {}
        if patch.labels is not None:
            body["metadata"] = {"labels": dict(patch.labels)}
        if patch.annotations:
            body.setdefault("metadata", {})["annotations"] = dict(patch.annotations)
        if patch.unschedulable is not None:
            body["spec"] = {"unschedulable": patch.unschedulable}
        if not body:
            return
        with translated(f"patch Node {name}"):
            self._http.call(
                "PATCH", core_path("nodes", name), body=body, content_type=MERGE_PATCH, timeout=self._timeout
            )

    def evict_pod(self, namespace: str, name: str) -> None:
        self._coordination.evict_pod(namespace, name)

    def record_event(self, event: ObjectEvent) -> None:
        self._coordination.record_event(event, now=self._now())

    def try_acquire_lease(self, name: str, *, holder: str, now: datetime, duration: timedelta) -> bool:
        return self._coordination.try_acquire_lease(name, holder=holder, now=now, duration=duration)

    def release_lease(self, name: str, *, holder: str) -> None:
        self._coordination.release_lease(name, holder=holder)
