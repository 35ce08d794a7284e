"""plan_autoselect: AutoSelect expansion — a new Karpenter NodeClaim per pod short of GPU capacity only.

Role: from the pool's pending TensorFusion pods (the scheduler rejected them), its GPU nodes
owned by Karpenter NodeClaims (templates: the pool's own nodes, by its nodeSelector, oldest
first), every expansion NodeClaim (label `tensor-fusion.ai/expansion-source`), the NodePools,
the template's GPU objects, the region's priced offerings and the pool's memories (each pod's
expansions, `autoselect_memory`; offerings out of capacity, `planning.unavailable`), decide:
- no GPU node in the pool (scaling from zero): one `NodeExpansionCheck` on the GPUPool, the
  first node left to Karpenter's own provisioning; GPU nodes but none a NodePool owns:
  `NodeExpansionFailed` per pod (TensorFusion's Events);
- per pod without an in-flight expansion: does it fit the template with the GPU checks off
  (nodeSelector, taints, CPU / memory)? No → `NodeExpansionCheck` Warning. Does its GPU request
  fit a fresh GPU like the template's (`autoselect_packing`)? No → `NodeExpansionFailed`, no node.
  Yes → packed onto the GPUs of an expansion in flight or made this round (`NodeExpansionCheck`,
  pre-scheduled), else a new NodeClaim: the template's spec pinned to one candidate
  (`autoselect_candidates`) and the launched capacity type — keys with `minValues` above 1 left
  unpinned — with the template's and the NodePool's labels and annotations (never
  `karpenter.sh/do-not-disrupt`, nor the labels Karpenter resolved at the template's launch), the
  NodePool as controller owner, asking for the GPUs its pods use, checked against Karpenter's CRD
  rules and against the NodePool's limits (`autoselect_limits`: one `NodePoolLimitReached` names
  the limit that stopped it); `NodeExpansionCompleted` when it is created; at most
  `max_in_flight` (15) expansions in flight, the rest wait;
- a pod whose expansion's node registered and has had its GPUs reported for `PLACEMENT_GRACE`
  but still waits (the scheduler gave that room to other pods) counts on it no more: it is packed
  or expanded again like a new pod (`autoselect_review` reads the expansions, pod by pod);
- per expansion that vanished before its node registered — Karpenter deletes a NodeClaim it
  cannot launch (InsufficientCapacity, NodeClassNotReady) and never writes `Launched=False` —
  a failed candidate: remembered for its pods, its offering marked unavailable for
  `unavailable_for`, `NodeExpansionFailed` on each pod, and the next candidate made in the same
  round; none left → a final `NodeExpansionFailed`. A NodeClaim Karpenter could not launch for
  another reason stays (`Launched=Unknown`, retried by Karpenter) and counts as in flight;
- with a `nodeProvisioner.budget`: a new node's first candidate that keeps the pool's expansions
  at or under the ceiling (`decisions.autoselect_budget`), its price recorded on the NodeClaim;
  none → no expansion, and one `BudgetExceeded` Warning on the GPUPool for the pods refused;
- the pool's memory of each pending pod's expansion is written back when it changed, after the
  NodeClaims it names were created (a NodeClaim found without a record is recognised by its
  `gpupool.io/expansion-for` annotation).

Must not: perform I/O, read the clock, make up names (suffixes are passed in), or trust the
event that triggered it (only the objects passed in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from gpupool.core.allocator.affinity import node_constraint_failure
from gpupool.core.allocator.request import MatchExpression, NodeConstraints
from gpupool.core.allocator.request import NodeSelectorTerm as AllocatorTerm
from gpupool.core.decisions.autoselect_budget import (
    ANNOTATION_EXPANSION_POOL,
    affordable_candidate,
    candidate_offering,
    expansion_spending,
)
from gpupool.core.decisions.autoselect_candidates import (
    Candidate,
    candidates,
    capacity_type_of,
    launched_placement,
)
from gpupool.core.decisions.autoselect_fit import non_gpu_blocker
from gpupool.core.decisions.autoselect_limits import EVENT_NODEPOOL_LIMIT_REACHED, NodePoolUsage
from gpupool.core.decisions.autoselect_memory import ExpansionRecord, expansions_text, read_expansions
from gpupool.core.decisions.autoselect_packing import ExpansionBin, GpuShape, Share, share_of, template_shape
from gpupool.core.decisions.autoselect_review import ExpansionReview, review_expansions
from gpupool.core.decisions.karpenter_nodeclaim import placement_of
from gpupool.core.decisions.launch_budget import warning_on_pool
from gpupool.core.decisions.launch_failure import OFFERING_UNAVAILABLE_FOR
from gpupool.core.model.base import ObjectMeta, OwnerReference
from gpupool.core.model.constants import (
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    EVENT_BUDGET_EXCEEDED,
    EVENT_NODE_EXPANSION_CHECK,
    EVENT_NODE_EXPANSION_COMPLETED,
    EVENT_NODE_EXPANSION_FAILED,
    INITIAL_GPU_NODE_LABEL,
    KARPENTER_DEFAULT_GPU_RESOURCE,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_REGION,
    KEY_ZONE,
    LABEL_EXPANSION_SOURCE,
)
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool, KarpenterRequirement
from gpupool.core.model.karpenter_rules import nodeclaim_problems
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import Budget, GPUPool
from gpupool.core.planning.budget import BudgetError
from gpupool.core.planning.plan import (
    CreateNodeClaim,
    MarkOfferingUnavailable,
    OfferingRef,
    Plan,
    RecordEvent,
    RememberExpansions,
)
from gpupool.core.planning.priced_offerings import price_annotations
from gpupool.core.planning.unavailable import unavailable_offerings
from gpupool.core.quantity import Quantity
from gpupool.core.vocabulary.expansions import ANNOTATION_EXPANSION_FOR, gpus_reported, pod_key_of

__all__ = [
    "ANNOTATION_EXPANSION_FOR",
    "DEFAULT_MAX_IN_FLIGHT",
    "LABEL_NODEPOOL",
    "non_gpu_blocker",
    "plan_autoselect",
]

DEFAULT_MAX_IN_FLIGHT = 15
LABEL_NODEPOOL = "karpenter.sh/nodepool"  # Karpenter's label on its NodeClaims and Nodes
# Labels Karpenter merges into a NodeClaim at launch (what that one node runs): not the template's to copy.
_LAUNCH_LABELS = frozenset(
    (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_REGION, KEY_CAPACITY_TYPE, "kubernetes.io/hostname")
)
_NODEPOOL_HASH = ("karpenter.sh/nodepool-hash", "karpenter.sh/nodepool-hash-version")


def _pod_key(pod: Pod) -> str:
    return pod_key_of(pod.metadata.namespace, pod.name)


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


def _serves(pool: GPUPool | None, node: Node) -> bool:
    """Whether `node` is one of `pool`'s (its nodeManagerConfig.nodeSelector; none: every GPU node)."""
    selector = pool.spec.node_manager_config.node_selector if pool is not None else None
    if selector is None or not selector.node_selector_terms:
        return True
    terms = tuple(
        AllocatorTerm(
            match_expressions=tuple(
                MatchExpression(key=e.key, operator=e.operator, values=tuple(e.values))
                for e in term.match_expressions
            )
        )
        for term in selector.node_selector_terms
    )
    return (
        node_constraint_failure(NodeConstraints(required_terms=terms), node.name, node.metadata.labels)
        is None
    )


def _templates(
    nodes: Sequence[Node], nodeclaims: Sequence[KarpenterNodeClaim], pool: GPUPool | None
) -> tuple[list[tuple[Node, KarpenterNodeClaim]], int]:
    """The pool's GPU nodes whose NodeClaim a NodePool owns (not expansions themselves), oldest
    first; and how many of the pool's GPU nodes there are at all (0: scaling from zero)."""
    owner = {nc.status.node_name: nc for nc in nodeclaims if nc.status.node_name}
    gpu_nodes = [
        n for n in nodes if n.metadata.labels.get(INITIAL_GPU_NODE_LABEL) == "true" and _serves(pool, n)
    ]
    found = [
        (node, owner[node.name])
        for node in sorted(
            gpu_nodes,
            key=lambda n: (n.metadata.creation_timestamp is None, n.metadata.creation_timestamp, n.name),
        )
        if node.name in owner
        and LABEL_NODEPOOL in owner[node.name].metadata.labels
        and LABEL_EXPANSION_SOURCE not in owner[node.name].metadata.labels
    ]
    return found, len(gpu_nodes)


def _min_values(template: KarpenterNodeClaim, nodepool: KarpenterNodePool | None) -> dict[str, int]:
    """The largest `minValues` the template or its NodePool puts on each key."""
    found: dict[str, int] = {}
    pool_reqs = nodepool.spec.template.spec.requirements if nodepool else []
    for requirement in [*template.spec.requirements, *pool_reqs]:
        if requirement.min_values:
            found[requirement.key] = max(found.get(requirement.key, 0), requirement.min_values)
    return found


def _pins(candidate: Candidate, capacity_type: str | None, min_values: Mapping[str, int]) -> dict[str, str]:
    """The keys an expansion is pinned on: instance type and zone of its candidate and the launched
    capacity type — but never a key with `minValues` above 1 (one value cannot satisfy it, and
    Karpenter deletes such a NodeClaim as insufficient capacity): that key keeps the template's."""
    pinned = {KEY_INSTANCE_TYPE: candidate[0], KEY_ZONE: candidate[1]}
    if capacity_type is not None:
        pinned[KEY_CAPACITY_TYPE] = capacity_type
    return {k: v for k, v in pinned.items() if min_values.get(k, 0) <= 1}


def _resolved_by_karpenter(key: str) -> bool:
    """A label Karpenter writes on a NodeClaim for what that one node is (instance type, zone,
    arch, os, its provider's `karpenter.<provider>/…` labels, `karpenter.sh/registered` …), so
    not the template's to copy: Karpenter writes the new node's own at its launch."""
    if key == LABEL_NODEPOOL:
        return False
    if key in _LAUNCH_LABELS:
        return True
    prefix = key.partition("/")[0] if "/" in key else ""
    return prefix.startswith("karpenter.") or prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")


def _owner(nodepool: KarpenterNodePool | None) -> list[OwnerReference]:
    if nodepool is None or not nodepool.metadata.uid:
        return []
    return [
        OwnerReference.controlled_by(
            api_version=nodepool.api_version,
            kind=nodepool.kind,
            name=nodepool.name,
            uid=nodepool.metadata.uid,
        )
    ]


def _expansion(
    template: KarpenterNodeClaim,
    node: Node,
    pod: Pod,
    pinned: Mapping[str, str],
    nodepool: KarpenterNodePool | None,
    name: str,
    billing: dict[str, str],
) -> KarpenterNodeClaim:
    """A NodeClaim like the template's, as Karpenter's provisioner would write it from its
    NodePool: the NodePool's template labels and annotations, the template NodeClaim's (the
    labels Karpenter resolved at launch — what *that* node runs — and `karpenter.sh/do-not-disrupt`
    left out: the expansion must stay consolidatable), the NodePool as controller owner."""
    requirements = [r for r in template.spec.requirements if r.key not in pinned]
    narrowed = [KarpenterRequirement(key=k, operator="In", values=[v]) for k, v in pinned.items()]
    pool_meta = nodepool.spec.template.metadata if nodepool else None
    labels = {
        **{k: v for k, v in template.metadata.labels.items() if not _resolved_by_karpenter(k)},
        **(pool_meta.labels if pool_meta else {}),
        LABEL_NODEPOOL: template.metadata.labels[LABEL_NODEPOOL],
        LABEL_EXPANSION_SOURCE: node.name,
    }
    copied = {**template.metadata.annotations, **(pool_meta.annotations if pool_meta else {})}
    if nodepool is not None:  # the hash Karpenter's drift detection compares, as its provisioner writes it
        copied.update({k: v for k, v in nodepool.metadata.annotations.items() if k in _NODEPOOL_HASH})
    annotations = {
        **{k: v for k, v in copied.items() if k != ANNOTATION_KARPENTER_DO_NOT_DISRUPT},
        ANNOTATION_EXPANSION_FOR: _pod_key(pod),
        **billing,
    }
    spec = template.spec.model_copy(update={"requirements": [*narrowed, *requirements]})
    return KarpenterNodeClaim(
        metadata=ObjectMeta(
            name=name, labels=labels, annotations=annotations, owner_references=_owner(nodepool)
        ),
        spec=spec,
    )


def _mark_vanished(
    review: ExpansionReview,
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


def _gpu_resource(nodeclaim: KarpenterNodeClaim) -> str:
    """The extended resource the NodeClaim asks GPUs as (the template's; `nvidia.com/gpu` by default)."""
    asked = nodeclaim.spec.resources.requests
    return next((r for r in asked if r.endswith("/gpu")), KARPENTER_DEFAULT_GPU_RESOURCE)


def _asking_for(nodeclaim: KarpenterNodeClaim, gpus: int) -> KarpenterNodeClaim:
    """`nodeclaim` asking Karpenter for a node with at least `gpus` GPUs (those its pods use)."""
    requests = {**nodeclaim.spec.resources.requests, _gpu_resource(nodeclaim): Quantity(max(gpus, 1))}
    resources = nodeclaim.spec.resources.model_copy(update={"requests": requests})
    return nodeclaim.model_copy(update={"spec": nodeclaim.spec.model_copy(update={"resources": resources})})


def _in_flight_bins(
    review: ExpansionReview,
    memory: Mapping[str, ExpansionRecord],
    pods: Sequence[Pod],
    shape: GpuShape | None,
) -> list[ExpansionBin]:
    """The GPUs of each expansion in flight, with the shares of the pending pods made or packed
    for it already placed (in pod-key order), so new pods fill what is left."""
    if shape is None:
        return []
    by_key = {_pod_key(p): p for p in pods}
    bins: list[ExpansionBin] = []
    for name, nodeclaim in sorted(review.live.items()):
        asked = nodeclaim.spec.resources.requests.get(_gpu_resource(nodeclaim))
        count = min(int(asked.value), shape.count) if asked is not None and asked.value >= 1 else shape.count
        placed = ExpansionBin(name=name, shape=shape, gpus=count, candidate=_text_of(nodeclaim))
        for key in sorted(k for k, r in memory.items() if r.nodeclaim == name and k in by_key):
            share = share_of(by_key[key], shape)
            if not isinstance(share, str):
                placed.place(key, share)
        bins.append(placed)
    return bins


def _text_of(nodeclaim: KarpenterNodeClaim) -> str:
    placed = placement_of(nodeclaim)
    return f"{placed.get(KEY_INSTANCE_TYPE, '?')}/{placed.get(KEY_ZONE, '?')}"


def _pack(key: str, share: Share | None, bins: Sequence[ExpansionBin]) -> ExpansionBin | None:
    """The first expansion (in flight, then new) whose GPUs take `share`; None: a new node."""
    if share is None:
        return None
    return next((b for b in bins if b.place(key, share)), None)


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
    gpus: Sequence[GPU] = (),
) -> Plan:
    """Expansion NodeClaims for pods short of GPU capacity only (see module docstring), each
    admitted by `pool`'s budget at its catalog price (`decisions.autoselect_budget`), pods packed
    onto the GPUs of expansions in flight or made in this round (`gpus`: the template's GPU
    objects; without them each pod gets its own node)."""
    gpu_pool = pool.name if pool is not None else ""
    provisioner = pool.spec.node_manager_config.node_provisioner if pool is not None else None
    budget: Budget | None = provisioner.budget if provisioner else None
    remembered = read_expansions(pool) if pool is not None else {}
    blocked = unavailable_offerings(pool, now) if pool is not None else {}
    pending = {_pod_key(p) for p in pods}
    review = review_expansions(nodeclaims, pending, remembered, reported=gpus_reported(gpus), now=now)
    templates, gpu_nodes = _templates(nodes, nodeclaims, pool)
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
    room = max_in_flight - len(review.in_flight_names)
    names = iter(suffixes)
    waiting = 0
    limits = NodePoolUsage.of(nodepools, nodeclaims, nodes)
    shape = template_shape(templates[0][0], gpus) if templates else None
    bins = _in_flight_bins(review, memory, pods, shape)
    new_bins: dict[int, ExpansionBin] = {}  # index of its CreateNodeClaim in `actions` → its GPUs
    stopped: dict[str, str] = {}  # NodePool → the limit that stopped its expansions
    if pods and not templates and gpu_nodes == 0:
        # Scaling from zero: no node to copy; Karpenter's own provisioning answers pending pods.
        message = (
            f"{len(pods)} pod(s) wait with no GPU node in the pool yet: the first node is left "
            "to Karpenter's own provisioning"
        )
        actions.append(
            RecordEvent(
                pool=gpu_pool,
                object_kind="GPUPool",
                object_name=gpu_pool,
                event_type="Normal",
                reason=EVENT_NODE_EXPANSION_CHECK,
                message=message,
            )
        )
        reasons.append(f"pool {gpu_pool}: {message}")
        pods = []
    for pod in sorted(
        pods,
        key=lambda p: (p.metadata.creation_timestamp is None, p.metadata.creation_timestamp, _pod_key(p)),
    ):
        key = _pod_key(pod)
        if key in review.covered:
            reasons.append(f"pod {key}: an in-flight NodeClaim was made for it")
            continue
        if not templates:
            message = (
                "GPU nodes exist but none is owned by a Karpenter NodePool's NodeClaim to take as template"
            )
            actions.append(_event(key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        node, template = templates[0]
        blocker = non_gpu_blocker(pod, node, template)
        if blocker is not None:
            message = f"not expanding: more than GPU capacity is missing: {blocker}"
            actions.append(_event(key, EVENT_NODE_EXPANSION_CHECK, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        record = memory.get(key, ExpansionRecord())
        share = share_of(pod, shape) if shape is not None else None
        if isinstance(share, str):
            message = f"not expanding: no node like {node.name} can serve it: {share}"
            actions.append(_event(key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        packed = _pack(key, share, bins)
        if packed is not None:
            memory[key] = replace(record, nodeclaim=packed.name, candidate=packed.candidate or None)
            message = f"pre-scheduled onto the GPUs of NodeClaim {packed.name}, in flight"
            actions.append(_event(key, EVENT_NODE_EXPANSION_CHECK, message, warning=False))
            reasons.append(f"pod {key}: {message}")
            continue
        launched = launched_placement(template, node)
        capacity_type = capacity_type_of(launched)
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
        candidate, _ = chosen
        billing = {ANNOTATION_EXPANSION_POOL: gpu_pool} if gpu_pool else {}
        offering = candidate_offering(*candidate, requirements, offerings)
        if offering is not None:  # its price, where it came from and when (as a claim records it)
            billing.update(price_annotations(offering))
        nodepool = by_name.get(pool_name)
        pinned = _pins(candidate, karpenter_capacity, _min_values(template, nodepool))
        manifest = _expansion(template, node, pod, pinned, nodepool, f"{pool_name}-{suffix}", billing)
        problems = nodeclaim_problems(manifest)
        if problems:
            message = f"the NodeClaim copied from {template.name} would be refused: {'; '.join(problems)}"
            actions.append(_event(key, EVENT_NODE_EXPANSION_FAILED, message, warning=True))
            reasons.append(f"pod {key}: {message}")
            continue
        over = limits.exceeded_by(pool_name, node)
        if over is not None:
            stopped.setdefault(pool_name, over)
            reasons.append(f"pod {key}: not expanding: {over}")
            continue
        limits.add(pool_name)
        room -= 1
        if shape is not None and share is not None:
            opened = ExpansionBin(
                name=manifest.name, shape=shape, gpus=shape.count, candidate=_text(candidate)
            )
            opened.place(key, share)
            bins.append(opened)
            new_bins[len(actions)] = opened
        actions.append(CreateNodeClaim(manifest=manifest, node=node.name))
        created = f"NodeClaim {manifest.name} created in NodePool {pool_name} from node {node.name}"
        actions.append(_event(key, EVENT_NODE_EXPANSION_COMPLETED, created, warning=False))
        memory[key] = replace(record, nodeclaim=manifest.name, candidate=_text(candidate), registered=False)
        reasons.append(f"pod {key}: NodeClaim {manifest.name} in NodePool {pool_name} ({_text(candidate)})")
    for index, opened in new_bins.items():
        action = actions[index]
        if isinstance(action, CreateNodeClaim):
            actions[index] = action.model_copy(update={"manifest": _asking_for(action.manifest, opened.used)})
    for pool_name, over in sorted(stopped.items()):
        actions.append(warning_on_pool(gpu_pool, EVENT_NODEPOOL_LIMIT_REACHED, over))
        reasons.append(f"NodePool {pool_name}: {over}")
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
