"""The `AgentCluster` port over the official Kubernetes client.

Role: list this node's pods (field selector `spec.nodeName`) and GPU objects (label selector),
create or update GPU objects and their status, write the GPUNode status, record Events (GPU
events in namespace `default`, worker events in the pod's namespace) and evict pods. A 409 on
create falls back to an update; a missing GPUNode is created with the pool label it should carry.

Must not: decide anything, or log object bodies (no secrets pass here, but bodies are large).
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from kubernetes import client as _client
from kubernetes.client import exceptions as _exceptions

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool_incluster.agent.discovery import hostname_label
from gpupool_incluster.agent.ports import JsonObject

__all__ = ["KubeAgentCluster"]

log = logging.getLogger("gpupool.agent")
client: Any = _client
ApiException: Any = _exceptions.ApiException
G, V = c.API_GROUP, "v1"


class KubeAgentCluster:
    def __init__(self, api_client: Any, *, component: str = "gpupool-agent") -> None:
        self.api = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.component = component

    def node_pods(self, node: str) -> list[Pod]:
        found = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
        raw = self.api.sanitize_for_serialization(found).get("items") or []
        return [Pod.model_validate({"apiVersion": "v1", "kind": "Pod", **item}) for item in raw]

    def node_gpus(self, node: str) -> list[JsonObject]:
        found = self.custom.list_cluster_custom_object(
            G, V, "gpus", label_selector=f"kubernetes.io/hostname={hostname_label(node)}"
        )
        return [  # a shortened label could be another node's: the status names the node itself
            g
            for g in found.get("items") or []
            if ((g.get("status") or {}).get("nodeSelector") or {}).get("kubernetes.io/hostname", node) == node
        ]

    def apply_gpu(self, body: JsonObject) -> None:
        name = body["metadata"]["name"]
        meta = {"metadata": {k: body["metadata"][k] for k in ("labels", "annotations")}}
        try:
            current = self.custom.get_cluster_custom_object(G, V, "gpus", name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.custom.create_cluster_custom_object(
                G, V, "gpus", {k: v for k, v in body.items() if k != "status"}
            )
        else:
            stale = set((current.get("metadata") or {}).get("annotations") or {}) - set(
                body["metadata"]["annotations"]
            )
            removals = {key: None for key in stale if key.startswith(f"{c.DOMAIN}/gpu-missing")}
            if removals:
                meta["metadata"]["annotations"] = {**body["metadata"]["annotations"], **removals}
            self.custom.patch_cluster_custom_object(G, V, "gpus", name, meta)
        self.custom.patch_cluster_custom_object_status(G, V, "gpus", name, {"status": body["status"]})

    def node_pool(self, node: str) -> str | None:
        try:
            found = self.custom.get_cluster_custom_object(G, V, "gpunodes", node)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        for key, value in ((found.get("metadata") or {}).get("labels") or {}).items():
            if key.startswith(c.LABEL_POOL_PREFIX) and value == "true":
                return str(key[len(c.LABEL_POOL_PREFIX) :])
        return None

    def write_gpunode_status(self, node: str, status: JsonObject) -> None:
        try:
            self.custom.patch_cluster_custom_object_status(G, V, "gpunodes", node, {"status": status})
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = {
                "apiVersion": c.API_VERSION,
                "kind": "GPUNode",
                "metadata": {"name": node},
                "spec": {"manageMode": "AutoSelect"},
            }
            self.custom.create_cluster_custom_object(G, V, "gpunodes", body)
            self.custom.patch_cluster_custom_object_status(G, V, "gpunodes", node, {"status": status})

    def record_event(
        self,
        *,
        involved: JsonObject,
        reason: str,
        message: str,
        kind: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        namespace = involved.get("namespace") or "default"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{involved['name']}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.core.create_namespaced_event(namespace, body, _preload_content=False)

    def evict_pod(self, namespace: str, name: str, *, uid: str = "") -> None:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if uid:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        self.core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False)
