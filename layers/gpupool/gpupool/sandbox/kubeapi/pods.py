"""Pod subresources: `pods/binding` and `pods/eviction` (policy/v1).

Binding assigns a node once and records the PodScheduled condition. Eviction deletes the pod
unless a PodDisruptionBudget in its namespace whose selector matches it would drop below
`minAvailable` or above `maxUnavailable` (int or percent, rounded up as upstream); only
Running pods count as healthy, and an unhealthy pod may always be evicted.

Must not: parse HTTP; it works on the store under its lock.
"""

from __future__ import annotations

import copy
from typing import Any

from gpupool.sandbox.kubeapi import errors
from gpupool.sandbox.kubeapi.clock import Clock, rfc3339
from gpupool.sandbox.kubeapi.objects import metadata
from gpupool.sandbox.kubeapi.resources import BUILTIN_TYPES
from gpupool.sandbox.kubeapi.selectors import LabelSelector, selector_from_object
from gpupool.sandbox.kubeapi.store import Store

JsonObject = dict[str, Any]
PDBS = next(rt for rt in BUILTIN_TYPES if rt.plural == "poddisruptionbudgets")
PODS = next(rt for rt in BUILTIN_TYPES if rt.plural == "pods")


def bind(
    store: Store, clock: Clock, namespace: str, name: str, body: Any, *, dry_run: bool = False
) -> JsonObject:
    """`pods/binding`: set spec.nodeName once (409 after) and the PodScheduled condition.
    Answers a `Status` (Success, 201), as upstream does."""
    if not isinstance(body, dict):
        raise errors.bad_request("a Binding must be a JSON object")
    target = body.get("target") or {}
    node = target.get("name")
    if not node or target.get("kind", "Node") != "Node":
        raise errors.invalid("Binding", "", name, [("target", "Invalid value: must name a Node")])
    with store.lock:
        pod = store.get(PODS, namespace, name)
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            raise errors.ApiError(409, "Conflict", f'pod {name} is already assigned to node "{assigned}"')
        if dry_run:
            return _success(201)
        store.mutate(
            PODS, namespace, name, lambda p: _with_node(p, str(node)), status_only=False, trusted=True
        )
        now = rfc3339(clock.now())
        store.mutate(PODS, namespace, name, lambda p: _scheduled(p, now), status_only=True)
    return _success(201)


def _success(code: int) -> JsonObject:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def evict(
    store: Store, namespace: str, name: str, *, dry_run: bool = False, uid: str | None = None
) -> JsonObject:
    """`pods/eviction`: delete the pod unless a matching PodDisruptionBudget forbids it (429), or
    the Eviction's `deleteOptions.preconditions.uid` names another pod (409 Conflict, as the API
    server's eviction REST passes its deleteOptions to the delete)."""
    with store.lock:
        pod = store.get(PODS, namespace, name)
        if uid is not None and uid != metadata(pod).get("uid"):
            raise errors.conflict("", "pods", name)
        labels = metadata(pod).get("labels") or {}
        if _healthy(pod):
            for pdb_entry in store.entries(PDBS, namespace)[0]:
                selector = selector_from_object((pdb_entry.obj.get("spec") or {}).get("selector") or {})
                if selector.requirements and selector.matches(labels):
                    _check_budget(store, namespace, pdb_entry.obj, selector)
        store.delete(PODS, namespace, name, dry_run=dry_run)
    return _success(201)


def _check_budget(store: Store, namespace: str, pdb: JsonObject, selector: LabelSelector) -> None:
    pods = [
        e.obj
        for e in store.entries(PODS, namespace)[0]
        if selector.matches(metadata(e.obj).get("labels") or {})
        and not metadata(e.obj).get("deletionTimestamp")
    ]
    expected, healthy = len(pods), sum(1 for pod in pods if _healthy(pod))
    spec = pdb.get("spec") or {}
    if spec.get("minAvailable") is not None:
        allowed = healthy - _scaled(spec["minAvailable"], expected)
    elif spec.get("maxUnavailable") is not None:
        allowed = _scaled(spec["maxUnavailable"], expected) - (expected - healthy)
    else:
        return
    if allowed < 1:
        raise errors.too_many_requests(
            f"Cannot evict pod as it would violate the pod's disruption budget ({metadata(pdb)['name']})."
        )


def _with_node(pod: JsonObject, node: str) -> JsonObject:
    updated = copy.deepcopy(pod)
    updated.setdefault("spec", {})["nodeName"] = node
    return updated


def _scheduled(pod: JsonObject, now: str) -> JsonObject:
    updated = copy.deepcopy(pod)
    status = updated.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now})
    status["conditions"] = conditions
    return updated


def _healthy(pod: JsonObject) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def _scaled(value: Any, total: int) -> int:
    """An IntOrString budget: `3`, or `"50%"` of `total` rounded up, as upstream."""
    text = str(value)
    if text.endswith("%"):
        return -(-int(text[:-1]) * total // 100)
    return int(text)
