"""plan_autoselect: AutoSelect expansion — a new Karpenter NodeClaim per pod short of GPU capacity only.

Role: from the pool's pending TensorFusion pods (the scheduler rejected them), its GPU nodes
owned by Karpenter NodeClaims (templates), every expansion NodeClaim (label
`tensor-fusion.ai/expansion-source`), the template's NodePool, the region's priced offerings
and the pool's memories (each pod's expansions, `autoselect_memory`; offerings out of capacity,
`planning.unavailable`), decide:
- per pod without an in-flight expansion NodeClaim: does it fit the template with the GPU
  checks off (nodeSelector, taints, CPU / memory)? No → no expansion, a `NodeExpansionCheck`
  Warning with the reason. Yes → a NodeClaim copied from the template's, in the same NodePool,
  pinned to one candidate (`autoselect_candidates`: the template's launched instance type and
  zone first, read from the labels Karpenter sets at launch, then what the template, the
  NodePool and — where it names no zone — the region's zones allow, narrowed by the pod's
  nodeSelector / required affinity) and to the launched capacity type, labelled
  `expansion-source=<template node>`, checked against Karpenter's CRD rules before it is made;
  candidates the pod already tried and offerings the pool remembers as out of capacity are
  skipped; at most `max_in_flight` (15) expansion NodeClaims in flight, the rest wait;
- per expansion that vanished before its node registered — Karpenter deletes a NodeClaim it
  cannot launch (InsufficientCapacity, NodeClassNotReady) and never writes `Launched=False` —
  a failed candidate: remembered for its pod, its offering marked unavailable for
  `unavailable_for` (the memory capacity errors use), `NodeExpansionFailed` on the pod, and the
  next candidate made in the same round; none left → a final `NodeExpansionFailed`. A NodeClaim
  Karpenter could not launch for another reason stays (`Launched=Unknown`, retried by Karpenter)
  and counts as in flight;
- per expansion NodeClaim whose node registered, while its pod still waits: `NodeExpansionCompleted`;
- with a `nodeProvisioner.budget`: a pod's first candidate that keeps the pool's expansions at or
  under the ceiling (`decisions.autoselect_budget`), its price recorded on the NodeClaim; none →
  no expansion, and one `BudgetExceeded` Warning on the GPUPool for the pods refused;
- the pool's memory of each pending pod's expansions is written back when it changed, after the
  NodeClaims it names were created (a NodeClaim found without a record is recognised by its
  `gpupool.io/expansion-for` annotation).

Must not: perform I/O, read the clock, make up names (suffixes are passed in), or trust the
event that triggered it (only the objects passed in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from gpupool.core.decisions.autoselect_budget import (
    ANNOTATION_EXPANSION_POOL,
    affordable_candidate,
    expansion_spending,
)
from gpupool.core.decisions.autoselect_candidates import (
    Candidate,
    candidates,
    capacity_type_of,
    launched_placement,
)
from gpupool.core.decisions.autoselect_fit import non_gpu_blocker
from gpupool.core.decisions.autoselect_memory import ExpansionRecord, expansions_text, read_expansions
from gpupool.core.decisions.karpenter_nodeclaim import placement_of
from gpupool.core.decisions.launch_budget import warning_on_pool
from gpupool.core.decisions.launch_failure import OFFERING_UNAVAILABLE_FOR
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    EVENT_BUDGET_EXCEEDED,
    EVENT_NODE_EXPANSION_CHECK,
    EVENT_NODE_EXPANSION_COMPLETED,
    EVENT_NODE_EXPANSION_FAILED,
    INITIAL_GPU_NODE_LABEL,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_ZONE,
    LABEL_EXPANSION_SOURCE,
)
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool, KarpenterRequirement
from gpupool.core.model.karpenter_rules import nodeclaim_problems
from gpupool.core.model.pool import Budget, GPUPool
from gpupool.core.planning.budget import BudgetError
from gpupool.core.planning.plan import (
    Action,
    CreateNodeClaim,
    MarkOfferingUnavailable,
    OfferingRef,
    Plan,
    RecordEvent,
    RememberExpansions,
)
from gpupool.core.planning.unavailable import unavailable_offerings

__all__ = [
    "ANNOTATION_EXPANSION_FOR",
    "DEFAULT_MAX_IN_FLIGHT",
    "LABEL_NODEPOOL",
    "non_gpu_blocker",
    "plan_autoselect",
]

DEFAULT_MAX_IN_FLIGHT = 15
LABEL_NODEPOOL = "karpenter.sh/nodepool"  # Karpenter's label on its NodeClaims and Nodes
ANNOTATION_EXPANSION_FOR = "gpupool.io/expansion-for"  # <namespace>/<pod>: whom it was made for
_PINNED = (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_CAPACITY_TYPE)


def _pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.name}"


def _condition(nodeclaim: KarpenterNodeClaim, kind: str) -> str | None:
    return next((c.status for c in nodeclaim.status.conditions if c.type == kind), None)


def _text(candidate: Candidate) -> str:
    return f"{candidate[0]}/{candidate[1]}"


def _event(pod_key: str, reason: str, message: str, warning: bool) -> RecordEvent:
    namespace, _, name = pod_key.partition("/")
    return RecordEvent(
        object_kind="Pod",
        object_name=name,
        namespace=namespace,
        event_type="Warning" if warning else "Normal",
        reason=reason,
        message=message,
    )


def _templates(
    nodes: Sequence[Node], nodeclaims: Sequence[KarpenterNodeClaim]
) -> list[tuple[Node, KarpenterNodeClaim]]:
    owner = {nc.status.node_name: nc for nc in nodeclaims if nc.status.node_name}
    return [
        (node, owner[node.name])
        for node in sorted(nodes, key=lambda n: n.name)
        if node.metadata.labels.get(INITIAL_GPU_NODE_LABEL) == "true"
        and node.name in owner
        and LABEL_NODEPOOL in owner[node.name].metadata.labels
        and LABEL_EXPANSION_SOURCE not in owner[node.name].metadata.labels
    ]


def _expansion(
    template: KarpenterNodeClaim,
    node: Node,
    pod: Pod,
    candidate: Candidate,
    capacity_type: str | None,
    name: str,
    billing: dict[str, str],
) -> KarpenterNodeClaim:
    pinned = {KEY_INSTANCE_TYPE: candidate[0], KEY_ZONE: candidate[1]}
    if capacity_type is not None:
        pinned[KEY_CAPACITY_TYPE] = capacity_type
    requirements = [r for r in template.spec.requirements if r.key not in pinned]
    narrowed = [KarpenterRequirement(key=k, operator="In", values=[v]) for k, v in pinned.items()]
    labels = {k: v for k, v in template.metadata.labels.items() if k == LABEL_NODEPOOL}
    annotations = {
        ANNOTATION_EXPANSION_FOR: _pod_key(pod),
        ANNOTATION_KARPENTER_DO_NOT_DISRUPT: "true",
        **billing,
    }
    spec = template.spec.model_copy(update={"requirements": [*narrowed, *requirements]})
    return KarpenterNodeClaim(
        metadata=ObjectMeta(
            name=name, labels={**labels, LABEL_EXPANSION_SOURCE: node.name}, annotations=annotations
        ),
        spec=spec,
    )


@dataclass
class _Review:
    """What the expansions say, pod by pod, before new ones are made."""

    in_flight: int = 0
    covered: set[str] = field(default_factory=set)
    memory: dict[str, ExpansionRecord] = field(default_factory=dict)
    vanished: dict[str, str] = field(default_factory=dict)  # pod → the candidate that failed
    actions: list[Action] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def _review(
    nodeclaims: Sequence[KarpenterNodeClaim], pending: set[str], remembered: Mapping[str, ExpansionRecord]
) -> _Review:
    """In-flight expansions, the pods they cover, and the ones that vanished before registering.
    A registered NodeClaim whose pod still waits covers it (not in flight) and is reported."""
    review = _Review()
    live: dict[str, KarpenterNodeClaim] = {}
    for nc in sorted(nodeclaims, key=lambda n: n.name):
        pod_key = nc.metadata.annotations.get(ANNOTATION_EXPANSION_FOR, "")
        if (
            LABEL_EXPANSION_SOURCE in nc.metadata.labels
            and nc.metadata.deletion_timestamp is None
            and pod_key
        ):
            live.setdefault(pod_key, nc)
    for pod_key in sorted(pending):
        record = remembered.get(pod_key, ExpansionRecord())
        expansion = live.get(pod_key)
        if expansion is not None:
            registered = _condition(expansion, "Registered") == "True"
            placed = placement_of(expansion)
            candidate = f"{placed.get(KEY_INSTANCE_TYPE, '?')}/{placed.get(KEY_ZONE, '?')}"
            review.memory[pod_key] = replace(
                record, nodeclaim=expansion.name, candidate=candidate, registered=registered
            )
            review.covered.add(pod_key)
            if registered:  # its node joined; the scheduler has yet to place the pod there
                message = f"node {expansion.status.node_name} joined from NodeClaim {expansion.name}"
                review.actions.append(_event(pod_key, EVENT_NODE_EXPANSION_COMPLETED, message, warning=False))
            else:
                review.in_flight += 1
            continue
        if record.nodeclaim and record.candidate and not record.registered:
            review.vanished[pod_key] = record.candidate
            record = replace(record, nodeclaim=None, candidate=None, tried=(*record.tried, record.candidate))
        elif record.nodeclaim:  # its node came and went: the pod waits again, nothing failed
            record = replace(record, nodeclaim=None, candidate=None, registered=False)
        if record != ExpansionRecord():
            review.memory[pod_key] = record
    return review


def _mark_vanished(
    review: _Review,
    remembered: Mapping[str, ExpansionRecord],
    capacity_type: str | None,
    gpu_pool: str,
    now: datetime,
    unavailable_for: timedelta,
) -> dict[str, datetime]:
    """Events and offering marks for the vanished expansions (pinned to the template's launched
    `capacity_type`; unknown: no mark, only the pod's memory); the marks, to plan past."""
    marks: dict[str, datetime] = {}
    for pod_key, candidate in sorted(review.vanished.items()):
        name = remembered[pod_key].nodeclaim
        message = (
            f"NodeClaim {name} ({candidate}) was deleted before its node registered (Karpenter deletes "
            "a NodeClaim it cannot launch: InsufficientCapacity or NodeClassNotReady); "
            "trying the next candidate"
        )
        review.actions.append(_event(pod_key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
        review.reasons.append(f"pod {pod_key}: {message}")
        if gpu_pool and capacity_type is not None:
            key = f"{candidate}/{capacity_type}"
            if key not in marks:
                marks[key] = now + unavailable_for
                review.actions.append(
                    MarkOfferingUnavailable(pool=gpu_pool, offering_key=key, until=marks[key])
                )
    return marks


def plan_autoselect(
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    nodeclaims: Sequence[KarpenterNodeClaim],
    nodepools: Sequence[KarpenterNodePool],
    *,
    suffixes: Sequence[str],
    now: datetime,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    pool: GPUPool | None = None,
    offerings: Sequence[OfferingRef] = (),
    unavailable_for: timedelta = OFFERING_UNAVAILABLE_FOR,
) -> Plan:
    """Expansion NodeClaims for pods short of GPU capacity only (see module docstring), each
    admitted by `pool`'s budget at its catalog price (`decisions.autoselect_budget`)."""
    gpu_pool = pool.name if pool is not None else ""
    provisioner = pool.spec.node_manager_config.node_provisioner if pool is not None else None
    budget: Budget | None = provisioner.budget if provisioner else None
    remembered = read_expansions(pool) if pool is not None else {}
    blocked = unavailable_offerings(pool, now) if pool is not None else {}
    pending = {_pod_key(p) for p in pods}
    review = _review(nodeclaims, pending, remembered)
    templates = _templates(nodes, nodeclaims)
    launched_capacity = (
        capacity_type_of(launched_placement(templates[0][1], templates[0][0])) if templates else None
    )
    blocked = {
        **blocked,
        **_mark_vanished(review, remembered, launched_capacity, gpu_pool, now, unavailable_for),
    }
    actions, reasons, memory = review.actions, review.reasons, review.memory
    try:
        spending = expansion_spending(budget, gpu_pool, nodeclaims, offerings)
    except BudgetError as error:
        message = f"nodeProvisioner.budget cannot be read: {error}; nothing new is launched"
        actions.append(warning_on_pool(gpu_pool, "NodeLaunchFailed", message))
        return Plan(actions=tuple(actions), reasons=(*reasons, f"pool {gpu_pool}: {message}"))
    by_name = {p.name: p for p in nodepools}
    room = max_in_flight - review.in_flight
    names = iter(suffixes)
    waiting = 0
    for pod in sorted(
        pods,
        key=lambda p: (p.metadata.creation_timestamp is None, p.metadata.creation_timestamp, _pod_key(p)),
    ):
        key = _pod_key(pod)
        if key in review.covered:
            reasons.append(f"pod {key}: an in-flight NodeClaim was made for it")
            continue
        if not templates:
            message = "no GPU node owned by a Karpenter NodeClaim to take as template"
            actions.append(_event(key, EVENT_NODE_EXPANSION_CHECK, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        node, template = templates[0]
        blocker = non_gpu_blocker(pod, node, template)
        if blocker is not None:
            message = f"not expanding: more than GPU capacity is missing: {blocker}"
            actions.append(_event(key, EVENT_NODE_EXPANSION_CHECK, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        launched = launched_placement(template, node)
        capacity_type = capacity_type_of(launched)
        record = memory.get(key, ExpansionRecord())
        pool_name = template.metadata.labels[LABEL_NODEPOOL]
        allowed = [
            c
            for c in candidates(pod, template, node, by_name.get(pool_name), offerings)
            if _text(c) not in record.tried
            and (capacity_type is None or f"{_text(c)}/{capacity_type}" not in blocked)
        ]
        if not allowed:
            message = f"every allowed candidate failed ({', '.join(record.tried) or 'none allowed'})"
            actions.append(_event(key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        suffix = next(names, None)
        if room <= 0 or suffix is None:
            waiting += 1
            continue
        karpenter_capacity = launched.get(KEY_CAPACITY_TYPE)
        requirements = (
            [KarpenterRequirement(key=KEY_CAPACITY_TYPE, operator="In", values=[karpenter_capacity])]
            if karpenter_capacity
            else template.spec.requirements
        )
        chosen = affordable_candidate(allowed, requirements, offerings, spending)
        if chosen is None:
            reasons.append(f"pod {key}: the budget admits none of {len(allowed)} candidate(s)")
            continue
        candidate, price = chosen
        billing = {ANNOTATION_EXPANSION_POOL: gpu_pool} if gpu_pool else {}
        if price is not None:
            billing[ANNOTATION_HOURLY_PRICING] = str(price)
        manifest = _expansion(
            template, node, pod, candidate, karpenter_capacity, f"{pool_name}-{suffix}", billing
        )
        problems = nodeclaim_problems(manifest)
        if problems:
            message = f"the NodeClaim copied from {template.name} would be refused: {'; '.join(problems)}"
            actions.append(_event(key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        room -= 1
        actions.append(CreateNodeClaim(manifest=manifest, node=node.name))
        memory[key] = replace(record, nodeclaim=manifest.name, candidate=_text(candidate), registered=False)
        reasons.append(f"pod {key}: NodeClaim {manifest.name} in NodePool {pool_name} ({_text(candidate)})")
    if spending is not None and spending.refused:
        message = spending.message(spending.refused)
        actions.append(warning_on_pool(gpu_pool, EVENT_BUDGET_EXCEEDED, message))
        reasons.append(f"pool {gpu_pool}: {message}")
    if waiting:
        reasons.append(f"{waiting} pod(s) wait: maxInFlightNodes ({max_in_flight}) NodeClaims are in flight")
    text = expansions_text(memory)
    if pool is not None and text != expansions_text(remembered):
        actions.append(RememberExpansions(pool=gpu_pool, expansions=text))
    return Plan(actions=tuple(actions), reasons=tuple(reasons))
