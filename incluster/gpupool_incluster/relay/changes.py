"""Kubernetes changes → the relay CloudEvents of docs/events.md, each addressed to its function.

Role: `ChangeTranslator.observe(kind, obj, deleted=...)` compares a watched object with what it
remembered of the same uid and returns the `RelayEvent`s that change means: a TensorFusion worker
pod turning `PodScheduled=False/Unschedulable` (launch), a GPUPool's spec or `tensor-fusion.ai`
annotations changing (launch) or its manual-compaction annotation being set (compact), a
TensorFusionCluster's `spec.gpuPools` changing (launch), a Node labelled
`tensor-fusion.ai/node-provisioner` appearing, turning Ready or going away (bind), a claim getting
a `deletionTimestamp` (bind). An object seen for the first time (a fresh relay's first list)
counts as changed, so a restarted relay re-delivers the current state: the functions are
idempotent. Event ids are `<uid>-<resourceVersion>`; a second event from the same change gets a
suffix so ids stay unique.

Must not: do I/O, read the clock (`seen_at` is passed in) or decide what the functions do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupool.core.intake.relay import TYPE_PREFIX
from gpupool.core.model import constants as c
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool

__all__ = ["KINDS", "ChangeTranslator", "RelayEvent", "WatchedObject", "is_unschedulable_worker"]

# SHIM (r-relay): the models the forwarder watches and hands to `ChangeTranslator.observe`.
WatchedObject = Pod | Node | GPUNodeClaim | KarpenterNodeClaim | GPUPool | TensorFusionCluster

TF_SCHEDULER = "tensor-fusion-scheduler"
# Kinds the forwarder watches (the translator's vocabulary).
KINDS = ("Pod", "Node", "GPUNodeClaim", "NodeClaim", "GPUPool", "TensorFusionCluster")
# Which function acts on each event type.
FUNCTION_OF = {
    "pod.unschedulable": "launch",
    "pool.changed": "launch",
    "cluster.changed": "launch",
    "pool.manual-compaction": "compact",
    "node.joined": "bind",
    "node.ready": "bind",
    "node.deleted": "bind",
    "claim.deleted": "bind",
}
# Types whose events in one batching window collapse to one delivery per pool.
COALESCED = frozenset({"pod.unschedulable", "pool.changed", "cluster.changed", "pool.manual-compaction"})


@dataclass(frozen=True, slots=True)
class RelayEvent:
    """One CloudEvent to deliver: `kind` is the short type (`node.joined`)."""

    kind: str
    id: str
    data: Mapping[str, str]
    seen_at: float = 0.0
    coalesced: int = field(default=1, compare=False)

    @property
    def function(self) -> str:
        return FUNCTION_OF[self.kind]

    @property
    def window_key(self) -> tuple[str, str, str] | None:
        """(function, type, pool or cluster) for coalesced types; None: never coalesced."""
        if self.kind not in COALESCED:
            return None
        scope = self.data.get("pool") or self.data.get("cluster") or ""
        return (self.function, self.kind, scope)

    def cloudevent(self, *, source: str, time: str) -> dict[str, Any]:
        return {
            "specversion": "1.0",
            "id": self.id,
            "source": source,
            "type": TYPE_PREFIX + self.kind,
            "time": time,
            "datacontenttype": "application/json",
            "data": dict(self.data),
        }


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [x for x in found or [] if isinstance(x, Mapping)]


def is_unschedulable_worker(pod: Mapping[str, Any]) -> bool:
    """A pod the TensorFusion scheduler handles, marked PodScheduled=False with reason Unschedulable."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    labels = _meta(pod).get("labels") or {}
    ours = (spec or {}).get("schedulerName") == TF_SCHEDULER or labels.get(c.LABEL_COMPONENT) == (
        c.COMPONENT_WORKER
    )
    if not ours or (spec or {}).get("nodeName"):
        return False
    return any(
        x.get("type") == "PodScheduled" and x.get("status") == "False" and x.get("reason") == "Unschedulable"
        for x in _conditions(pod)
    )


def _node_ready(node: Mapping[str, Any]) -> bool:
    return any(x.get("type") == "Ready" and x.get("status") == "True" for x in _conditions(node))


def _pool_of_pod(pod: Mapping[str, Any]) -> str | None:
    meta = _meta(pod)
    value = (meta.get("annotations") or {}).get(c.ANNOTATION_GPU_POOL) or (meta.get("labels") or {}).get(
        c.ANNOTATION_GPU_POOL
    )
    return str(value) if value else None


def _fingerprint(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class ChangeTranslator:
    """Remembers, per kind and uid, the little each rule compares; not thread-safe (one per watch)."""

    def __init__(self) -> None:
        self._memory: dict[tuple[str, str], dict[str, Any]] = {}

    # ---- SHIM (branch r-relay, for the shared watches): the typed interface the forwarder calls,
    # `observe(obj: WatchedObject, *, deleted, seen_at)` and `forget_all(type)`, over the dict rules
    # below, which still take (kind, raw). The event-vocabulary branch rewrites the rules on models;
    # this shim (and the (kind, raw) form, kept for its tests) goes when the two are merged.
    def forget_all(self, kind: type[WatchedObject] | str) -> None:
        name = kind if isinstance(kind, str) else kind.KIND
        for key in [k for k in self._memory if k[0] == name]:
            del self._memory[key]

    def observe(
        self,
        obj: WatchedObject | str,
        raw: Mapping[str, Any] | None = None,
        *,
        deleted: bool = False,
        seen_at: float = 0.0,
    ) -> list[RelayEvent]:
        if isinstance(obj, str):
            return self._observe(obj, raw or {}, deleted=deleted, seen_at=seen_at)
        dumped = obj.model_dump(by_alias=True, mode="json")
        return self._observe(type(obj).KIND, dumped, deleted=deleted, seen_at=seen_at)

    # ---- END SHIM
    def _observe(
        self, kind: str, obj: Mapping[str, Any], *, deleted: bool = False, seen_at: float = 0.0
    ) -> list[RelayEvent]:
        meta = _meta(obj)
        uid = str(meta.get("uid") or meta.get("name") or "")
        if not uid or not meta.get("name"):
            return []
        key = (kind, uid)
        before = self._memory.pop(key, None)
        now = self._summary(kind, obj)
        if not deleted:
            self._memory[key] = now
        base = f"{uid}-{meta.get('resourceVersion') or '0'}"
        emitted = self._rules(kind, obj, before, now, deleted)
        return [
            RelayEvent(kind=t, id=base if i == 0 else f"{base}-{t}", data=d, seen_at=seen_at)
            for i, (t, d) in enumerate(emitted)
        ]

    @staticmethod
    def _summary(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = _meta(obj)
        annotations = meta.get("annotations") or {}
        if kind == "Pod":
            return {"unschedulable": is_unschedulable_worker(obj)}
        if kind == "Node":
            return {
                "ready": _node_ready(obj),
                "provisioned": c.LABEL_NODE_PROVISIONER in (meta.get("labels") or {}),
            }
        if kind in ("GPUNodeClaim", "NodeClaim"):
            return {"deleting": bool(meta.get("deletionTimestamp"))}
        if kind == "GPUPool":
            ours = {k: v for k, v in annotations.items() if k.startswith(c.DOMAIN + "/")}
            ours.pop(c.ANNOTATION_MANUAL_COMPACTION, None)
            return {
                "spec": _fingerprint([obj.get("spec"), ours]),
                "compaction": annotations.get(c.ANNOTATION_MANUAL_COMPACTION),
            }
        if kind == "TensorFusionCluster":
            return {"pools": _fingerprint((obj.get("spec") or {}).get("gpuPools"))}
        raise ValueError(f"the relay does not translate {kind} objects")

    @staticmethod
    def _rules(
        kind: str, obj: Mapping[str, Any], before: dict[str, Any] | None, now: dict[str, Any], deleted: bool
    ) -> list[tuple[str, dict[str, str]]]:
        meta = _meta(obj)
        name = str(meta.get("name"))
        old = before or {}
        if kind == "Pod":
            if deleted or not now["unschedulable"] or old.get("unschedulable"):
                return []
            data = {"namespace": str(meta.get("namespace") or "default"), "name": name}
            pool = _pool_of_pod(obj)
            return [("pod.unschedulable", data | ({"pool": pool} if pool else {}))]
        if kind == "Node":
            claim = (meta.get("labels") or {}).get(c.LABEL_NODE_PROVISIONER)
            if claim is None and not old.get("provisioned"):
                return []
            data = {"node": name} | ({"claim": str(claim)} if claim else {})
            if deleted:
                return [("node.deleted", data)]
            found: list[tuple[str, dict[str, str]]] = []
            if not old.get("provisioned"):
                found.append(("node.joined", data))
            if now["ready"] and not old.get("ready"):
                found.append(("node.ready", data))
            return found
        if kind in ("GPUNodeClaim", "NodeClaim"):
            if kind == "NodeClaim" and c.LABEL_MANAGED_BY not in (meta.get("labels") or {}):
                return []
            gone = now["deleting"] or deleted
            return [("claim.deleted", {"claim": name})] if gone and not old.get("deleting") else []
        if kind == "GPUPool":
            if deleted:
                return [("pool.changed", {"pool": name})]
            found = []
            if now["spec"] != old.get("spec"):
                found.append(("pool.changed", {"pool": name}))
            if now["compaction"] and now["compaction"] != old.get("compaction"):
                found.append(
                    ("pool.manual-compaction", {"pool": name, "requestedAt": str(now["compaction"])})
                )
            return found
        if deleted or now["pools"] != old.get("pools"):
            return [("cluster.changed", {"cluster": name})]
        return []
