"""`KarpenterApi` on the official Kubernetes client: karpenter.sh/v1 NodeClaims and node classes.

Role: implements `gpupool.service.karpenter_ports.KarpenterApi`. NodeClaims are read as
gpupool's `KarpenterNodeClaim` envelope and created from it; gpupool's NodeClaims are those
labelled `tensor-fusion.ai/node-provisioner`. A node class is looked up by group / kind / name
through API discovery (kind → plural), so any provider's class works (EC2NodeClass on AWS).
Failures are translated by `kube_errors`; Karpenter's CRDs missing reads as "no NodeClaims".

Must not: decide anything, retry, or build its own client (the wiring passes an `ApiClient`).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from gpupool.adapters.kube_errors import translated
from gpupool.core.model.constants import LABEL_NODE_PROVISIONER
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodeClassRef, KarpenterNodePool
from gpupool.service.errors import NotFound, PermanentError

__all__ = ["KubeKarpenter"]

GROUP = "karpenter.sh"
VERSION = "v1"
PLURAL = "nodeclaims"
_SERVER_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "generation",
    "managedFields",
    "resourceVersion",
)


def _parse(raw: dict[str, Any]) -> KarpenterNodeClaim:
    try:
        return KarpenterNodeClaim.model_validate(raw)
    except ValueError as error:
        name = (raw.get("metadata") or {}).get("name", "?")
        raise PermanentError(f"NodeClaim {name} cannot be read: {error}") from error


class KubeKarpenter:
    """The Karpenter port for one Kubernetes cluster."""

    def __init__(self, api_client: Any, *, request_timeout_s: float = 10.0) -> None:
        self._custom: Any = k8s.CustomObjectsApi(api_client)
        self._discovery: Any = k8s.ApisApi(api_client)
        self._api_client = api_client
        self._timeout = request_timeout_s

    def _items(self, plural: str, **kwargs: Any) -> list[dict[str, Any]]:
        try:
            with translated(f"list {plural}"):
                raw = self._custom.list_cluster_custom_object(
                    GROUP, VERSION, plural, _request_timeout=self._timeout, **kwargs
                )
        except NotFound:  # Karpenter's CRDs are not installed: nothing of ours can exist
            return []
        items: list[dict[str, Any]] = raw.get("items") or []
        return items

    def list_nodeclaims(self, *, ours_only: bool = True) -> list[KarpenterNodeClaim]:
        selector = {"label_selector": LABEL_NODE_PROVISIONER} if ours_only else {}
        return [_parse(item) for item in self._items(PLURAL, **selector)]

    def list_nodepools(self) -> list[KarpenterNodePool]:
        pools: list[KarpenterNodePool] = []
        for item in self._items("nodepools"):
            try:
                pools.append(KarpenterNodePool.model_validate(item))
            except ValueError as error:
                name = (item.get("metadata") or {}).get("name", "?")
                raise PermanentError(f"NodePool {name} cannot be read: {error}") from error
        return pools

    def check_access(self) -> None:
        try:
            with translated("list NodeClaims"):
                self._custom.list_cluster_custom_object(
                    GROUP, VERSION, PLURAL, limit=1, _request_timeout=self._timeout
                )
        except NotFound as missing:
            raise PermanentError(
                f"Karpenter's NodeClaim CRD ({GROUP}/{VERSION}) is not installed"
            ) from missing

    def get_nodeclaim(self, name: str) -> KarpenterNodeClaim:
        with translated(f"get NodeClaim {name}"):
            raw = self._custom.get_cluster_custom_object(
                GROUP, VERSION, PLURAL, name, _request_timeout=self._timeout
            )
        return _parse(raw)

    def create_nodeclaim(self, nodeclaim: KarpenterNodeClaim) -> KarpenterNodeClaim:
        body = nodeclaim.model_dump(by_alias=True, exclude_none=True, mode="json")
        body["metadata"] = {k: v for k, v in body.get("metadata", {}).items() if k not in _SERVER_FIELDS}
        body.pop("status", None)
        with translated(f"create NodeClaim {nodeclaim.name}"):
            raw = self._custom.create_cluster_custom_object(
                GROUP, VERSION, PLURAL, body, _request_timeout=self._timeout
            )
        return _parse(raw)

    def delete_nodeclaim(self, name: str) -> None:
        with translated(f"delete NodeClaim {name}"):
            self._custom.delete_cluster_custom_object(
                GROUP, VERSION, PLURAL, name, _request_timeout=self._timeout
            )

    def _plural(self, group: str, kind: str) -> tuple[str, str] | None:
        """(version, plural) serving `kind` in `group`, from discovery; None when not served."""
        with translated(f"discover {group}"):
            groups = self._discovery.get_api_versions(_request_timeout=self._timeout)
        versions = [v.version for g in groups.groups or [] if g.name == group for v in g.versions or []]
        for version in versions:
            with translated(f"discover {group}/{version}"):
                resources = k8s.CustomObjectsApi(self._api_client).get_api_resources(group, version)
            for resource in resources.resources or []:
                if resource.kind == kind and "/" not in resource.name:
                    return version, str(resource.name)
        return None

    def node_class_exists(self, ref: KarpenterNodeClassRef) -> bool:
        served = self._plural(ref.group, ref.kind)
        if served is None:
            return False
        version, plural = served
        try:
            with translated(f"get {ref.kind} {ref.name}"):
                self._custom.get_cluster_custom_object(
                    ref.group, version, plural, ref.name, _request_timeout=self._timeout
                )
        except NotFound:
            return False
        return True
