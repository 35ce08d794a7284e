"""plan_autoselect: AutoSelect expansion — a new Karpenter NodeClaim per pod short of GPU capacity only.

Role: from the pool's pending TensorFusion pods (the scheduler rejected them), its GPU nodes
owned by Karpenter NodeClaims (templates), every expansion NodeClaim (label
`tensor-fusion.ai/expansion-source`) and the template's NodePool, decide:
- per pod without an in-flight expansion NodeClaim: does it fit the template with the GPU
  checks off (nodeSelector, taints, CPU / memory)? No → no expansion, a `NodeExpansionCheck`
  Warning with the reason. Yes → a NodeClaim copied from the template's, in the same NodePool,
  narrowed to one candidate (instance type × zone allowed by the NodePool and the pod's
  nodeSelector / required affinity), labelled `expansion-source=<template node>`;
  at most `max_in_flight` (15) expansion NodeClaims in flight, the rest wait with a reason;
- per expansion NodeClaim Karpenter failed to launch (`Launched=False`): delete it, record
  `NodeExpansionFailed`, and create the next untried candidate for the same pod (the tried
  ones travel in an annotation), or give up when none is left;
- per expansion NodeClaim whose node registered, while its pod still waits: `NodeExpansionCompleted`;
- with a `nodeProvisioner.budget`: a pod's first candidate that keeps the pool's expansions at or
  under the ceiling (`decisions.autoselect_budget`), its price recorded on the NodeClaim; none →
  no expansion, and one `BudgetExceeded` Warning on the GPUPool for the pods refused.

Must not: perform I/O, read the clock, make up names (suffixes are passed in), or trust the
event that triggered it (only the objects passed in).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupool.core.decisions.autoselect_budget import (
    ANNOTATION_EXPANSION_POOL,
    affordable_candidate,
    expansion_spending,
)
from gpupool.core.decisions.autoselect_fit import non_gpu_blocker, required_in
from gpupool.core.decisions.launch_budget import warning_on_pool
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    EVENT_BUDGET_EXCEEDED,
    EVENT_NODE_EXPANSION_CHECK,
    EVENT_NODE_EXPANSION_COMPLETED,
    EVENT_NODE_EXPANSION_FAILED,
    INITIAL_GPU_NODE_LABEL,
    KEY_INSTANCE_TYPE,
    KEY_ZONE,
    LABEL_EXPANSION_SOURCE,
)
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool, KarpenterRequirement
from gpupool.core.model.pool import Budget
from gpupool.core.planning.budget import BudgetError
from gpupool.core.planning.plan import (
    Action,
    CreateNodeClaim,
    DeleteNodeClaim,
    OfferingRef,
    Plan,
    RecordEvent,
)

__all__ = [
    "ANNOTATION_EXPANSION_FOR",
    "ANNOTATION_EXPANSION_TRIED",
    "DEFAULT_MAX_IN_FLIGHT",
    "LABEL_NODEPOOL",
    "non_gpu_blocker",
    "plan_autoselect",
]

DEFAULT_MAX_IN_FLIGHT = 15
LABEL_NODEPOOL = "karpenter.sh/nodepool"  # Karpenter's label on its NodeClaims and Nodes
ANNOTATION_EXPANSION_FOR = "gpupool.io/expansion-for"  # <namespace>/<pod>: whom it was made for
ANNOTATION_EXPANSION_TRIED = "gpupool.io/expansion-tried"  # type/zone candidates that failed, comma-joined
_NARROWED = (KEY_INSTANCE_TYPE, KEY_ZONE)


def _pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.name}"


def _condition(nodeclaim: KarpenterNodeClaim, kind: str) -> str | None:
    return next((c.status for c in nodeclaim.status.conditions if c.type == kind), None)


def _candidates(
    pod: Pod, template: KarpenterNodeClaim, nodepool: KarpenterNodePool | None
) -> list[tuple[str, str]]:
    """(instance type, zone) pairs to try, the template's own first, then what the NodePool allows."""
    own = {r.key: r.values[0] for r in template.spec.requirements if r.operator == "In" and r.values}
    allowed = {key: [own[key]] if key in own else [] for key in _NARROWED}
    for requirement in nodepool.spec.template.spec.requirements if nodepool else []:
        if requirement.key in _NARROWED and requirement.operator == "In":
            allowed[requirement.key] += [v for v in requirement.values if v not in allowed[requirement.key]]
    for key in _NARROWED:
        wanted = required_in(pod, key)
        if wanted is not None:
            allowed[key] = [v for v in allowed[key] if v in wanted]
    return [(t, z) for t in allowed[KEY_INSTANCE_TYPE] for z in allowed[KEY_ZONE]]


def _expansion(
    template: KarpenterNodeClaim,
    node: Node,
    pod: Pod,
    candidate: tuple[str, str],
    tried: list[str],
    name: str,
    billing: dict[str, str],
) -> KarpenterNodeClaim:
    requirements = [r for r in template.spec.requirements if r.key not in _NARROWED]
    narrowed = [
        KarpenterRequirement(key=KEY_INSTANCE_TYPE, operator="In", values=[candidate[0]]),
        KarpenterRequirement(key=KEY_ZONE, operator="In", values=[candidate[1]]),
    ]
    labels = {k: v for k, v in template.metadata.labels.items() if k.startswith("karpenter.sh/nodepool")}
    annotations = {
        ANNOTATION_EXPANSION_FOR: _pod_key(pod),
        ANNOTATION_KARPENTER_DO_NOT_DISRUPT: "true",
        **billing,
    }
    if tried:
        annotations[ANNOTATION_EXPANSION_TRIED] = ",".join(tried)
    spec = template.spec.model_copy(update={"requirements": [*narrowed, *requirements]})
    return KarpenterNodeClaim(
        metadata=ObjectMeta(
            name=name, labels={**labels, LABEL_EXPANSION_SOURCE: node.name}, annotations=annotations
        ),
        spec=spec,
    )


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


def _placement(nodeclaim: KarpenterNodeClaim) -> str:
    values = {r.key: r.values[0] for r in nodeclaim.spec.requirements if r.operator == "In" and r.values}
    return f"{values.get(KEY_INSTANCE_TYPE, '?')}/{values.get(KEY_ZONE, '?')}"


def _review_expansions(
    nodeclaims: Sequence[KarpenterNodeClaim], pending: set[str], actions: list[Action], reasons: list[str]
) -> tuple[int, set[str], dict[str, list[str]]]:
    """In-flight count, pods covered by an in-flight NodeClaim, and tried candidates per pod.
    A registered NodeClaim whose pod still waits covers it (not in flight) and is reported."""
    in_flight, covered, tried = 0, set(), {}
    for nc in sorted(nodeclaims, key=lambda n: n.name):
        if LABEL_EXPANSION_SOURCE not in nc.metadata.labels or nc.metadata.deletion_timestamp is not None:
            continue
        pod_key = nc.metadata.annotations.get(ANNOTATION_EXPANSION_FOR, "")
        failed = next((c for c in nc.status.conditions if c.type == "Launched" and c.status == "False"), None)
        if failed is not None:
            previous = [
                t for t in nc.metadata.annotations.get(ANNOTATION_EXPANSION_TRIED, "").split(",") if t
            ]
            tried[pod_key] = [*previous, _placement(nc)]
            message = (
                f"NodeClaim {nc.name} ({_placement(nc)}) failed to launch: {failed.reason or 'no reason'}"
            )
            actions.append(DeleteNodeClaim(nodeclaim=nc.name))
            actions.append(_event(pod_key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
            reasons.append(f"{message}: delete it and try the next candidate")
        elif _condition(nc, "Registered") == "True":
            if pod_key not in pending:
                continue
            covered.add(pod_key)  # its node joined; the scheduler has yet to place the pod there
            message = f"node {nc.status.node_name} joined from NodeClaim {nc.name}"
            actions.append(_event(pod_key, EVENT_NODE_EXPANSION_COMPLETED, message, warning=False))
        else:
            in_flight += 1
            covered.add(pod_key)
    return in_flight, covered, tried


def plan_autoselect(
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    nodeclaims: Sequence[KarpenterNodeClaim],
    nodepools: Sequence[KarpenterNodePool],
    *,
    suffixes: Sequence[str],
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    gpu_pool: str = "",
    budget: Budget | None = None,
    offerings: Sequence[OfferingRef] = (),
) -> Plan:
    """Expansion NodeClaims for pods short of GPU capacity only (see module docstring), each
    admitted by `gpu_pool`'s `budget` at its catalog price (`decisions.autoselect_budget`)."""
    actions: list[Action] = []
    reasons: list[str] = []
    in_flight, covered, tried = _review_expansions(nodeclaims, {_pod_key(p) for p in pods}, actions, reasons)
    try:
        spending = expansion_spending(budget, gpu_pool, nodeclaims, offerings)
    except BudgetError as error:
        message = f"nodeProvisioner.budget cannot be read: {error}; nothing new is launched"
        actions.append(warning_on_pool(gpu_pool, "NodeLaunchFailed", message))
        return Plan(actions=tuple(actions), reasons=(*reasons, f"pool {gpu_pool}: {message}"))
    templates = _templates(nodes, nodeclaims)
    by_name = {p.name: p for p in nodepools}
    room = max_in_flight - in_flight
    names = iter(suffixes)
    waiting = 0
    for pod in sorted(
        pods,
        key=lambda p: (p.metadata.creation_timestamp is None, p.metadata.creation_timestamp, _pod_key(p)),
    ):
        key = _pod_key(pod)
        if key in covered:
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
        pool_name = template.metadata.labels[LABEL_NODEPOOL]
        done = tried.get(key, [])
        candidates = [
            c for c in _candidates(pod, template, by_name.get(pool_name)) if f"{c[0]}/{c[1]}" not in done
        ]
        if not candidates:
            message = f"every allowed candidate failed ({', '.join(done) or 'none allowed'})"
            actions.append(_event(key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        suffix = next(names, None)
        if room <= 0 or suffix is None:
            waiting += 1
            continue
        chosen = affordable_candidate(candidates, template.spec.requirements, offerings, spending)
        if chosen is None:
            reasons.append(f"pod {key}: the budget admits none of {len(candidates)} candidate(s)")
            continue
        room -= 1
        candidate, price = chosen
        billing = {ANNOTATION_EXPANSION_POOL: gpu_pool} if gpu_pool else {}
        if price is not None:
            billing[ANNOTATION_HOURLY_PRICING] = str(price)
        manifest = _expansion(template, node, pod, candidate, done, f"{pool_name}-{suffix}", billing)
        actions.append(CreateNodeClaim(manifest=manifest, node=node.name))
        reasons.append(
            f"pod {key}: NodeClaim {manifest.name} in NodePool {pool_name} ({'/'.join(candidate)})"
        )
    if spending is not None and spending.refused:
        message = spending.message(spending.refused)
        actions.append(warning_on_pool(gpu_pool, EVENT_BUDGET_EXCEEDED, message))
        reasons.append(f"pool {gpu_pool}: {message}")
    if waiting:
        reasons.append(f"{waiting} pod(s) wait: maxInFlightNodes ({max_in_flight}) NodeClaims are in flight")
    return Plan(actions=tuple(actions), reasons=tuple(reasons))
