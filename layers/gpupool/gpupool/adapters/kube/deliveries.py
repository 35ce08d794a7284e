"""The delivery ledger on Kubernetes: one `coordination.k8s.io/v1` Lease per relay delivery taken.

Role: `KubeDeliveryLedger` implements `gpupool.service.deliveries.DeliveryLedger` in the
functions' Lease namespace (GPUPOOL_KUBE_NAMESPACE, where the pool Leases are):
`gpupool-delivery-<key>`, labelled `gpupool.tensor-fusion.ai/record=delivery`, its state in the
annotation `gpupool.tensor-fusion.ai/delivery-state` (`processing` / `done`), its holder and
expiry as any Lease's (`holderIdentity`, `renewTime` + `leaseDurationSeconds`). Every write is
conditional: a claim is a create (409 AlreadyExists: someone has it) or a replace carrying the
resourceVersion it read (409: someone else won); release and prune delete with a
resourceVersion precondition, so a record another invocation just took over is never dropped.
RBAC: get, list, create, update, delete on leases in that namespace (the chart's
functions-leases Role). Requests go by path on the client's `ApiClient` (`kube.transport`), not
through the generated `CoordinationV1Api`, whose import a relay-triggered first invocation
would pay.

Must not: decide what a delivery means, wait or retry, or read the wall clock.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta
from typing import Any

from gpupool.adapters.kube.coordination import lease_expired, micro_time
from gpupool.adapters.kube.errors import translated
from gpupool.adapters.kube.transport import KubeTransport, group_path
from gpupool.service.deliveries import DeliveryState
from gpupool.service.errors import Conflict, DomainError, NotFound

__all__ = ["LABEL_RECORD", "RECORD_PREFIX", "STATE_ANNOTATION", "KubeDeliveryLedger"]

RECORD_PREFIX = "gpupool-delivery-"
LABEL_RECORD = "gpupool.tensor-fusion.ai/record"
STATE_ANNOTATION = "gpupool.tensor-fusion.ai/delivery-state"
_SELECTOR = f"{LABEL_RECORD}=delivery"

log = logging.getLogger(__name__)


class KubeDeliveryLedger:
    """Delivery records as Leases in `namespace`."""

    def __init__(self, api_client: Any, *, namespace: str, request_timeout_s: float) -> None:
        self._http = KubeTransport(api_client)
        self._namespace = namespace
        self._timeout = request_timeout_s

    def _path(self, name: str | None = None) -> str:
        return group_path("coordination.k8s.io", "v1", "leases", name, namespace=self._namespace)

    def _name(self, key: str) -> str:
        return f"{RECORD_PREFIX}{key}"

    def _body(
        self, key: str, *, holder: str, now: datetime, seconds: int, state: str, version: str | None
    ) -> dict[str, Any]:
        stamp = micro_time(now)
        metadata: dict[str, Any] = {
            "name": self._name(key),
            "namespace": self._namespace,
            "labels": {LABEL_RECORD: "delivery"},
            "annotations": {STATE_ANNOTATION: state},
        }
        if version is not None:
            metadata["resourceVersion"] = version
        spec = {
            "holderIdentity": holder,
            "leaseDurationSeconds": seconds,
            "acquireTime": stamp,
            "renewTime": stamp,
        }
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}

    def _read(self, key: str) -> dict[str, Any]:
        name = self._name(key)
        with translated(f"get Lease {self._namespace}/{name}"):
            return self._http.call_json("GET", self._path(name), timeout=self._timeout)

    def _create(self, body: dict[str, Any]) -> None:
        with translated(f"create Lease {self._namespace}/{body['metadata']['name']}"):
            self._http.call("POST", self._path(), body=body, timeout=self._timeout)

    def _replace(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        with translated(f"replace Lease {self._namespace}/{name}"):
            self._http.call("PUT", self._path(name), body=body, timeout=self._timeout)

    def _delete(self, name: str, version: str | None) -> None:
        options = {"preconditions": {"resourceVersion": version}} if version else {}
        with translated(f"delete Lease {self._namespace}/{name}"):
            self._http.call("DELETE", self._path(name), body=options, timeout=self._timeout)

    # ---- the port ----------------------------------------------------------------------------
    def claim(self, key: str, *, holder: str, now: datetime, hold_for: timedelta) -> DeliveryState:
        seconds = max(1, math.ceil(hold_for.total_seconds()))
        fresh = self._body(key, holder=holder, now=now, seconds=seconds, state="processing", version=None)
        try:
            self._create(fresh)
            return "first"
        except Conflict:  # AlreadyExists: a record of this delivery is there
            pass
        try:
            current = self._read(key)
        except NotFound:  # pruned or released between the two calls: a later delivery retries
            return "in-progress"
        spec = current.get("spec") or {}
        if not lease_expired(spec, now):
            state = ((current.get("metadata") or {}).get("annotations") or {}).get(STATE_ANNOTATION)
            return "done" if state == "done" else "in-progress"
        version = (current.get("metadata") or {}).get("resourceVersion")
        taken = self._body(key, holder=holder, now=now, seconds=seconds, state="processing", version=version)
        try:
            self._replace(taken)
        except (Conflict, NotFound):  # another invocation took it over first
            return "in-progress"
        return "first"

    def complete(self, key: str, *, holder: str, now: datetime, keep_for: timedelta) -> None:
        current = self._read(key)
        if (current.get("spec") or {}).get("holderIdentity") != holder:
            return
        version = (current.get("metadata") or {}).get("resourceVersion")
        seconds = max(1, math.ceil(keep_for.total_seconds()))
        body = self._body(key, holder=holder, now=now, seconds=seconds, state="done", version=version)
        try:
            self._replace(body)
        except (Conflict, NotFound):  # taken over after our hold expired: the new holder decides
            return

    def release(self, key: str, *, holder: str) -> None:
        try:
            current = self._read(key)
        except NotFound:
            return
        if (current.get("spec") or {}).get("holderIdentity") != holder:
            return
        try:
            self._delete(self._name(key), (current.get("metadata") or {}).get("resourceVersion"))
        except (Conflict, NotFound):
            return

    def prune(self, *, now: datetime) -> int:
        with translated(f"list Leases {self._namespace} ({_SELECTOR})"):
            listed = self._http.call_json(
                "GET", self._path(), query={"labelSelector": _SELECTOR}, timeout=self._timeout
            )
        items: list[dict[str, Any]] = listed.get("items") or []
        deleted = 0
        for lease in items:
            metadata = lease.get("metadata") or {}
            name = str(metadata.get("name") or "")
            if not name.startswith(RECORD_PREFIX) or not lease_expired(lease.get("spec") or {}, now):
                continue
            try:
                self._delete(name, metadata.get("resourceVersion"))
                deleted += 1
            except DomainError as error:  # changed or gone meanwhile, or the server is busy: next time
                log.info("delivery record %s not pruned: %s", name, error.message)
        return deleted
