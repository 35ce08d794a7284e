"""Kubernetes changes → the relay CloudEvents of docs/events.md, each addressed to its function.

Role: `ChangeTranslator.observe(obj, deleted=..., seen_at=...)` compares a watched object (a
parsed model: `WatchedObject`) with what it remembered of the same kind and uid and returns the
`RelayEvent`s that change means, each built from its definition in `gpupool.core.vocabulary.events`
(type, data model, function, coalescing): a TensorFusion pod turning unschedulable
(`core.vocabulary.pods.is_unschedulable`: pod.unschedulable), a GPUPool's spec or
`tensor-fusion.ai` annotations changing (pool.changed) or its manual-compaction annotation
being set (pool.manual-compaction), a TensorFusionCluster's `spec.gpuPools` changing
(cluster.changed), a Node labelled `tensor-fusion.ai/node-provisioner` appearing, turning Ready
or going away (node.joined / node.ready / node.deleted), a GPUNodeClaim — or a Karpenter
NodeClaim gpupool manages — getting a `deletionTimestamp` (claim.deleted). An object seen for the
first time (a fresh relay's first list) counts as changed, so a restarted relay re-delivers the
current state: the functions are idempotent. Event ids are `<uid>-<resourceVersion>`; a second
event from the same change gets a suffix so ids stay unique.

Must not: do I/O, parse raw dictionaries (the watch hands in models), read the clock (`seen_at`
is passed in) or decide what the functions do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, assert_never

from gpupool.core.intake.routing import FunctionName
from gpupool.core.model import constants as c
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.vocabulary.events import (
    CLAIM_DELETED,
    CLUSTER_CHANGED,
    NODE_DELETED,
    NODE_JOINED,
    NODE_READY,
    POD_UNSCHEDULABLE,
    POOL_CHANGED,
    POOL_MANUAL_COMPACTION,
    ClaimData,
    ClusterData,
    ManualCompactionData,
    NodeData,
    PodData,
    PoolData,
    RelayData,
    RelayEventType,
    relay_event_named,
)
from gpupool.core.vocabulary.pods import is_unschedulable, pool_of

__all__ = ["WATCHED_KINDS", "ChangeTranslator", "RelayEvent", "WatchedObject"]

# What the relay watches and translates, as the models the watch parses each object into.
WatchedObject = Pod | Node | GPUNodeClaim | KarpenterNodeClaim | GPUPool | TensorFusionCluster
WATCHED_KINDS: tuple[type[WatchedObject], ...] = (
    Pod,
    Node,
    GPUNodeClaim,
    KarpenterNodeClaim,
    GPUPool,
    TensorFusionCluster,
)


@dataclass(frozen=True, slots=True)
class RelayEvent:
    """One CloudEvent to deliver: `kind` is the short type (`node.joined`, see the vocabulary)."""

    kind: str
    id: str
    data: Mapping[str, str]
    seen_at: float = 0.0
    coalesced: int = field(default=1, compare=False)

    @property
    def event_type(self) -> RelayEventType[Any]:
        """Its definition in the vocabulary; raises ValueError for a kind that is none."""
        found = relay_event_named(self.kind)
        if found is None:
            raise ValueError(f"{self.kind!r} is not a relay event type")
        return found

    @property
    def function(self) -> FunctionName:
        return self.event_type.function

    @property
    def window_key(self) -> tuple[str, str, str] | None:
        """(function, type, pool or cluster) for coalesced types; None: never coalesced."""
        if not self.event_type.coalesced:
            return None
        scope = self.data.get("pool") or self.data.get("cluster") or ""
        return (self.function, self.kind, scope)

    def cloudevent(self, *, source: str, time: str) -> dict[str, Any]:
        return {
            "specversion": "1.0",
            "id": self.id,
            "source": source,
            "type": self.event_type.type,
            "time": time,
            "datacontenttype": "application/json",
            "data": dict(self.data),
        }


@dataclass(frozen=True, slots=True)
class _Seen:
    """The little the rules compare between two sightings of one object (per kind, the rest stays default)."""

    unschedulable: bool = False
    ready: bool = False
    provisioned: bool = False
    deleting: bool = False
    spec: str = ""  # a GPUPool's spec and tensor-fusion.ai annotations; a cluster's spec.gpuPools
    compaction: str | None = None  # a GPUPool's manual-compaction annotation


# (event type, its data) before ids are assigned.
_Emitted = list[tuple[RelayEventType[Any], RelayData]]


def _fingerprint(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _seen(obj: WatchedObject) -> _Seen:
    annotations = obj.metadata.annotations
    match obj:
        case Pod():
            return _Seen(unschedulable=is_unschedulable(obj))
        case Node():
            return _Seen(ready=obj.is_ready(), provisioned=c.LABEL_NODE_PROVISIONER in obj.metadata.labels)
        case GPUNodeClaim() | KarpenterNodeClaim():
            return _Seen(deleting=obj.metadata.deletion_timestamp is not None)
        case GPUPool():
            ours = {
                k: v
                for k, v in annotations.items()
                if k.startswith(c.DOMAIN + "/") and k != c.ANNOTATION_MANUAL_COMPACTION
            }
            spec = obj.spec.model_dump(mode="json", by_alias=True)
            return _Seen(
                spec=_fingerprint([spec, ours]), compaction=annotations.get(c.ANNOTATION_MANUAL_COMPACTION)
            )
        case TensorFusionCluster():
            return _Seen(
                spec=_fingerprint([p.model_dump(mode="json", by_alias=True) for p in obj.spec.gpu_pools])
            )
        case _:
            assert_never(obj)


def _pod_rules(pod: Pod, old: _Seen, now: _Seen, deleted: bool) -> _Emitted:
    if deleted or not now.unschedulable or old.unschedulable:
        return []
    data = PodData(namespace=pod.metadata.namespace or "default", name=pod.name, pool=pool_of(pod))
    return [(POD_UNSCHEDULABLE, data)]


def _node_rules(node: Node, old: _Seen, now: _Seen, deleted: bool) -> _Emitted:
    claim = node.metadata.labels.get(c.LABEL_NODE_PROVISIONER)
    if claim is None and not old.provisioned:
        return []
    data = NodeData(node=node.name, claim=claim or None)
    if deleted:
        return [(NODE_DELETED, data)]
    found: _Emitted = []
    if not old.provisioned:
        found.append((NODE_JOINED, data))
    if now.ready and not old.ready:
        found.append((NODE_READY, data))
    return found


def _claim_rules(claim: GPUNodeClaim | KarpenterNodeClaim, old: _Seen, now: _Seen, deleted: bool) -> _Emitted:
    if isinstance(claim, KarpenterNodeClaim) and c.LABEL_MANAGED_BY not in claim.metadata.labels:
        return []  # a NodeClaim gpupool did not create
    gone = now.deleting or deleted
    return [(CLAIM_DELETED, ClaimData(claim=claim.name))] if gone and not old.deleting else []


def _pool_rules(pool: GPUPool, old: _Seen, now: _Seen, deleted: bool) -> _Emitted:
    if deleted:
        return [(POOL_CHANGED, PoolData(pool=pool.name))]
    found: _Emitted = []
    if now.spec != old.spec:
        found.append((POOL_CHANGED, PoolData(pool=pool.name)))
    if now.compaction and now.compaction != old.compaction:
        found.append(
            (POOL_MANUAL_COMPACTION, ManualCompactionData(pool=pool.name, requested_at=now.compaction))
        )
    return found


def _cluster_rules(cluster: TensorFusionCluster, old: _Seen, now: _Seen, deleted: bool) -> _Emitted:
    if deleted or now.spec != old.spec:
        return [(CLUSTER_CHANGED, ClusterData(cluster=cluster.name))]
    return []


def _rules(obj: WatchedObject, before: _Seen | None, now: _Seen, deleted: bool) -> _Emitted:
    old = before or _Seen()
    match obj:
        case Pod():
            return _pod_rules(obj, old, now, deleted)
        case Node():
            return _node_rules(obj, old, now, deleted)
        case GPUNodeClaim() | KarpenterNodeClaim():
            return _claim_rules(obj, old, now, deleted)
        case GPUPool():
            return _pool_rules(obj, old, now, deleted)
        case TensorFusionCluster():
            return _cluster_rules(obj, old, now, deleted)
        case _:
            assert_never(obj)


class ChangeTranslator:
    """Remembers, per kind and uid, the little each rule compares; not thread-safe (one per watch)."""

    def __init__(self) -> None:
        self._memory: dict[tuple[type[WatchedObject], str], _Seen] = {}

    def forget_all(self, kind: type[WatchedObject]) -> None:
        """Forget every object of `kind` (its watch re-lists: what it lists next counts as new)."""
        for key in [k for k in self._memory if k[0] is kind]:
            del self._memory[key]

    def observe(self, obj: WatchedObject, *, deleted: bool = False, seen_at: float = 0.0) -> list[RelayEvent]:
        """The events `obj` changing (or, `deleted`, going away) means since it was last seen.

        Raises ValueError for an object of a kind the relay does not watch."""
        if not isinstance(obj, WATCHED_KINDS):
            raise ValueError(f"the relay does not translate {type(obj).__name__} objects")
        uid = obj.metadata.uid or obj.metadata.name or ""
        if not uid or not obj.metadata.name:
            return []
        now = _seen(obj)
        key = (type(obj), uid)
        before = self._memory.pop(key, None)
        if not deleted:
            self._memory[key] = now
        base = f"{uid}-{obj.metadata.resource_version or '0'}"
        return [
            RelayEvent(
                kind=event_type.name,
                id=base if index == 0 else f"{base}-{event_type.name}",
                data=data.wire(),
                seen_at=seen_at,
            )
            for index, (event_type, data) in enumerate(_rules(obj, before, now, deleted))
        ]
