"""AutoSelect's review of the expansions already made, pod by pod, before new ones are made.

Role: `review_expansions(nodeclaims, pending, remembered, reported=…, now=…)` reads the expansion
NodeClaims (label `tensor-fusion.ai/expansion-source`, annotation `gpupool.io/expansion-for`) and
the pool's memory (`autoselect_memory`) for each pending pod: an expansion in flight covers its
pods; one whose node registered covers them too — until that node's GPUs have been reported
(`gpus_reported`: its first GPU object's creation) for `PLACEMENT_GRACE` — the window in which
the scheduler extender keeps other pods from crowding it out there
(`gpupool.scheduler.extender.reservation`) —, after which a pod still waiting counts on it no
more; one gone before its node
registered is a failed candidate (`vanished`); one whose node came and went is forgotten.

Must not: perform I/O, read the clock (`now` is passed in), or make expansions (`decisions.autoselect`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from gpupool.core.decisions.autoselect_memory import ExpansionRecord
from gpupool.core.decisions.karpenter_nodeclaim import placement_of
from gpupool.core.model.constants import KEY_INSTANCE_TYPE, KEY_ZONE
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.planning.plan import Action
from gpupool.core.vocabulary.expansions import (
    ANNOTATION_EXPANSION_FOR,
    PLACEMENT_GRACE,
    expansion_made_for,
    gpus_reported,
)

__all__ = [
    "ANNOTATION_EXPANSION_FOR",
    "PLACEMENT_GRACE",
    "ExpansionReview",
    "gpus_reported",
    "review_expansions",
]


def _condition(nodeclaim: KarpenterNodeClaim, kind: str) -> str | None:
    return next((c.status for c in nodeclaim.status.conditions if c.type == kind), None)


@dataclass
class ExpansionReview:
    """What the expansions say, pod by pod, before new ones are made."""

    in_flight_names: set[str] = field(default_factory=set)
    live: dict[str, KarpenterNodeClaim] = field(default_factory=dict)  # in-flight expansions by name
    covered: set[str] = field(default_factory=set)
    memory: dict[str, ExpansionRecord] = field(default_factory=dict)
    vanished: dict[str, str] = field(default_factory=dict)  # pod → the candidate that failed
    actions: list[Action] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def review_expansions(
    nodeclaims: Sequence[KarpenterNodeClaim],
    pending: set[str],
    remembered: Mapping[str, ExpansionRecord],
    *,
    reported: Mapping[str, datetime],
    now: datetime,
) -> ExpansionReview:
    """In-flight expansions, the pods they cover, and the ones that vanished before registering.
    A registered NodeClaim whose pod still waits covers it (not in flight) and is reported — until
    its node's GPUs have been reported for `PLACEMENT_GRACE`: the scheduler had them and placed
    other pods there, so the pod waits as a new one (packed, or a node of its own)."""
    review = ExpansionReview()
    live: dict[str, KarpenterNodeClaim] = {}
    by_name: dict[str, KarpenterNodeClaim] = {}  # a NodeClaim several packed pods share
    for nc in sorted(nodeclaims, key=lambda n: n.name):
        pod_key = expansion_made_for(nc)
        if pod_key is not None:
            live.setdefault(pod_key, nc)
            by_name[nc.name] = nc
    for pod_key in sorted(pending):
        record = remembered.get(pod_key, ExpansionRecord())
        expansion = by_name.get(record.nodeclaim or "") or live.get(pod_key)
        since = reported.get(expansion.status.node_name or "") if expansion is not None else None
        if expansion is not None and since is not None and now - since >= PLACEMENT_GRACE:
            review.reasons.append(
                f"pod {pod_key}: node {expansion.status.node_name} has had its GPUs for "
                f"{int((now - since).total_seconds())} s and the pod still waits: it no longer counts on it"
            )
            review.memory[pod_key] = replace(record, nodeclaim=None, candidate=None, registered=False)
            continue
        if expansion is not None:
            registered = _condition(expansion, "Registered") == "True"
            placed = placement_of(expansion)
            candidate = f"{placed.get(KEY_INSTANCE_TYPE, '?')}/{placed.get(KEY_ZONE, '?')}"
            review.memory[pod_key] = replace(
                record, nodeclaim=expansion.name, candidate=candidate, registered=registered
            )
            review.covered.add(pod_key)
            if registered:  # its node joined; the scheduler has yet to place the pod there
                review.reasons.append(
                    f"pod {pod_key}: node {expansion.status.node_name} joined from NodeClaim {expansion.name}"
                )
            else:
                review.in_flight_names.add(expansion.name)
                review.live[expansion.name] = expansion
            continue
        if record.nodeclaim and record.candidate and not record.registered:
            review.vanished[pod_key] = record.candidate
            record = replace(record, nodeclaim=None, candidate=None, tried=(*record.tried, record.candidate))
        elif record.nodeclaim:  # its node came and went: the pod waits again, nothing failed
            record = replace(record, nodeclaim=None, candidate=None, registered=False)
        if record != ExpansionRecord():
            review.memory[pod_key] = record
    return review
