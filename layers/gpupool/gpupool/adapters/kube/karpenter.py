"""`KarpenterApi` on the official Kubernetes client: karpenter.sh/v1 NodeClaims and node classes.

Role: implements `gpupool.service.karpenter_ports.KarpenterApi`. NodeClaims are read as
gpupool's `KarpenterNodeClaim` envelope and created from it; gpupool's NodeClaims are those
labelled `tensor-fusion.ai/node-provisioner`. A node class is looked up by group / kind / name
through API discovery (kind → plural), so any provider's class works (EC2NodeClass on AWS).
Failures are translated by `kube.errors`; Karpenter's CRDs missing reads as "no NodeClaims".
Requests go by path on the client's `ApiClient` (`kube.transport`), not through the generated
`CustomObjectsApi` / `ApisApi`, whose import a function would pay at its first invocation.

Must not: decide anything, retry, or build its own client (the wiring passes an `ApiClient`).
"""

from __future__ import annotations

from typing import Any

from gpupool.adapters.kube.errors import translated
from gpupool.adapters.kube.transport import KubeTransport, group_path
from gpupool.core.model.constants import LABEL_NODE_PROVISIONER
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool, NodeClassReference
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
        self._http = KubeTransport(api_client)
        self._timeout = request_timeout_s

    def _send(self, action: str, method: str, path: str, **options: Any) -> dict[str, Any]:
        with translated(action):
            return self._http.call_json(method, path, timeout=self._timeout, **options)

    def _items(self, plural: str, *, query: dict[str, object] | None = None) -> list[dict[str, Any]]:
        try:
            raw = self._send(f"list {plural}", "GET", group_path(GROUP, VERSION, plural), query=query)
        except NotFound:  # Karpenter's CRDs are not installed: nothing of ours can exist
            return []
        items: list[dict[str, Any]] = raw.get("items") or []
        return items

    def list_nodeclaims(self, *, ours_only: bool = True) -> list[KarpenterNodeClaim]:
        query: dict[str, object] | None = {"labelSelector": LABEL_NODE_PROVISIONER} if ours_only else None
        return [_parse(item) for item in self._items(PLURAL, query=query)]

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
            self._send("list NodeClaims", "GET", group_path(GROUP, VERSION, PLURAL), query={"limit": 1})
        except NotFound as missing:
            raise PermanentError(
                f"Karpenter's NodeClaim CRD ({GROUP}/{VERSION}) is not installed"
            ) from missing

    def get_nodeclaim(self, name: str) -> KarpenterNodeClaim:
        return _parse(self._send(f"get NodeClaim {name}", "GET", group_path(GROUP, VERSION, PLURAL, name)))

    def create_nodeclaim(self, nodeclaim: KarpenterNodeClaim) -> KarpenterNodeClaim:
        body = nodeclaim.model_dump(by_alias=True, exclude_none=True, mode="json")
        body["metadata"] = {k: v for k, v in body.get("metadata", {}).items() if k not in _SERVER_FIELDS}
        body.pop("status", None)
        path = group_path(GROUP, VERSION, PLURAL)
        return _parse(self._send(f"create NodeClaim {nodeclaim.name}", "POST", path, body=body))

    def delete_nodeclaim(self, name: str) -> None:
        with translated(f"delete NodeClaim {name}"):
            self._http.call("DELETE", group_path(GROUP, VERSION, PLURAL, name), timeout=self._timeout)

    def _plural(self, group: str, kind: str) -> tuple[str, str] | None:
        """(version, plural) serving `kind` in `group`, from discovery; None when not served."""
        groups = self._send(f"discover {group}", "GET", "/apis").get("groups") or []
        versions = [
            str(v.get("version"))
            for g in groups
            if isinstance(g, dict) and g.get("name") == group
            for v in g.get("versions") or []
            if isinstance(v, dict) and v.get("version")
        ]
        for version in versions:
            path = group_path(group, version, "")  # the group version's resource list
            resources = self._send(f"discover {group}/{version}", "GET", path).get("resources") or []
            for resource in resources:
                if not isinstance(resource, dict) or resource.get("kind") != kind:
                    continue
                name = resource.get("name")
                if isinstance(name, str) and name and "/" not in name:  # not a subresource
                    return version, name
        return None

    def node_class_exists(self, ref: NodeClassReference) -> bool:
        served = self._plural(ref.group, ref.kind)
        if served is None:
            return False
        version, plural = served
        try:
            self._send(f"get {ref.kind} {ref.name}", "GET", group_path(ref.group, version, plural, ref.name))
        except NotFound:
            return False
        return True
