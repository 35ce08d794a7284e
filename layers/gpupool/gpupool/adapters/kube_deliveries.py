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
functions-leases Role).

Must not: decide what a delivery means, wait or retry, or read the wall clock.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import datetime, timedelta
from typing import Any

from kubernetes import client as k8s

from gpupool.adapters.kube_coordination import lease_expired, micro_time
from gpupool.adapters.kube_errors import read_body, translated
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
        self._leases: Any = k8s.CoordinationV1Api(api_client)
        self._namespace = namespace
        self._timeout = request_timeout_s

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
            response = self._leases.read_namespaced_lease(
                name, self._namespace, _preload_content=False, _request_timeout=self._timeout
            )
            lease: dict[str, Any] = json.loads(read_body(response))
        return lease

    def _create(self, body: dict[str, Any]) -> None:
        with translated(f"create Lease {self._namespace}/{body['metadata']['name']}"):
            read_body(
                self._leases.create_namespaced_lease(
                    self._namespace, body, _preload_content=False, _request_timeout=self._timeout
                )
            )

    def _replace(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        with translated(f"replace Lease {self._namespace}/{name}"):
            read_body(
                self._leases.replace_namespaced_lease(
                    name, self._namespace, body, _preload_content=False, _request_timeout=self._timeout
                )
            )

    def _delete(self, name: str, version: str | None) -> None:
        options = {"preconditions": {"resourceVersion": version}} if version else {}
        with translated(f"delete Lease {self._namespace}/{name}"):
            read_body(
                self._leases.delete_namespaced_lease(
                    name,
                    self._namespace,
                    body=options,
                    _preload_content=False,
                    _request_timeout=self._timeout,
                )
            )

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
            response = self._leases.list_namespaced_lease(
                self._namespace,
                label_selector=_SELECTOR,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            items: list[dict[str, Any]] = json.loads(read_body(response)).get("items") or []
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
