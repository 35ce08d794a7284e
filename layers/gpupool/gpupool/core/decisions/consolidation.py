"""plan_consolidation: drain one under-used node into the free GPUs of the others (`WhenUnderutilized`).

Role: the GPU-aware half of compaction, opt-in per pool (`nodeCompaction.policy:
WhenUnderutilized`; `WhenEmpty`, TensorFusion's and the default, never gets here). The empty
nodes are `plan_compaction`'s; this looks at nodes that hold TensorFusion workers and asks, with
the allocator's own fit (`rebuild_allocator` on the pool's GPU objects and the pods' recorded
allocations, then `Allocator.reserve` — TFLOPS, VRAM, GPU count, QoS, isolation, model, node
affinity, exactly as the scheduler extender would place them), whether every worker on the node
would find GPUs on the pool's other schedulable nodes. The first node, in order of fewest workers
then highest price, that passes every guard is drained: cordon, drain (the eviction API), delete
its claim (which terminates the instance). One node per run, as Karpenter's single-node
consolidation; the next run looks again.

Guards, each a reason when it refuses: claims in flight (wait); the disruption budgets
(`disruption_budget.allowed_disruptions`, nodes already cordoned or going away count as
disrupting); a node younger than the protection window, not Bound, cordoned, marked
should-delete, or `do-not-disrupt` (node or GPUNode); a worker with `tensor-fusion.ai/do-not-disrupt`
or `karpenter.sh/do-not-disrupt`; a worker whose GPU request or allocation cannot be read (then
nothing says where it could go); a PodDisruptionBudget that would allow fewer evictions than the
node's workers it covers; after removal, total < minResources or available < warmResources (TFLOPS
and VRAM; the workers move, so the pool's available capacity falls by the node's total); the
node's hourly price times `consolidationWindow` not above `savingsThreshold`.

AutoSelect pools: the chosen node is cordoned and drained as above, then labelled
`should-delete` with the `karpenter.sh/do-not-disrupt` gpupool set removed (`compaction`'s
guard), and Karpenter's consolidation removes it once empty; a node no NodePool owns is left
alone with a reason.
Replacing a node with a cheaper offering that holds its workers is not planned yet (a reason says
which node it would have been).

Must not: perform I/O, read the clock, or move a worker onto a GPU the allocator would refuse; the
service re-reads the pool and decides again right before it drains.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from gpupool.core.allocator.allocator import AllocationError
from gpupool.core.allocator.build import gpu_info, rebuild_allocator
from gpupool.core.allocator.pod_request import RequestError, allocation_from_pod, request_from_pod
from gpupool.core.allocator.request import GpuRequest
from gpupool.core.decisions.compaction import LABEL_NODEPOOL, consolidation_enabled, released_guard
from gpupool.core.decisions.disruption_budget import allowed_disruptions
from gpupool.core.model.base import duration_seconds
from gpupool.core.model.claim_state import claim_counts, claim_phase, do_not_disrupt, node_claim
from gpupool.core.model.common import LabelSelector
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    EVENT_COMPACTION,
    LABEL_DO_NOT_DISRUPT,
    LABEL_SHOULD_DELETE,
)
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import NodeCompaction, ResourceAmount
from gpupool.core.model.requirements import all_hold
from gpupool.core.planning.plan import (
    Action,
    CordonNode,
    DeleteClaim,
    DrainNode,
    LabelNode,
    Plan,
    RecordEvent,
)
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.quantity import Quantity, sum_quantities

__all__ = [
    "Consolidation",
    "DisruptionAllowance",
    "Move",
    "consolidation_enabled",
    "plan_consolidation",
    "select_consolidation",
    "selector_matches",
]

ZERO = Quantity(0)
# Nodes weighed per run at most: each costs one allocator rebuild (a pool's thousands of nodes
# would make a run slow); the rest are weighed on later runs as the first ones change.
MAX_CANDIDATES = 16


@dataclass(frozen=True)
class DisruptionAllowance:
    """One PodDisruptionBudget as the eviction API applies it: its namespace, selector and
    `status.disruptionsAllowed` (how many more of the pods it selects may be evicted now)."""

    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int


@dataclass(frozen=True)
class Move:
    """Where the allocator would place one worker of the drained node: node and GPUs."""

    pod: str
    node: str
    gpus: tuple[str, ...]


@dataclass(frozen=True)
class Consolidation:
    """The node to drain, its claim, the moves that show its workers fit elsewhere, the hourly
    price it saves and the saving over the consolidation window."""

    node: str
    claim: str | None
    moves: tuple[Move, ...]
    hourly_saving: Decimal
    window_saving: Decimal


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """meta/v1 LabelSelector semantics (an empty selector selects everything): matchLabels, and
    matchExpressions (In, NotIn, Exists, DoesNotExist) as the one requirement algebra reads them."""
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    return all_hold(selector.match_expressions, labels)


def _pod_protected(pod: Pod) -> bool:
    notes, labels = pod.metadata.annotations, pod.metadata.labels
    return any(
        source.get(key, "").lower() == "true"
        for source in (notes, labels)
        for key in (LABEL_DO_NOT_DISRUPT, ANNOTATION_KARPENTER_DO_NOT_DISRUPT)
    )


def _pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.name}"


def _price(snapshot: PoolSnapshot, claim: str | None) -> Decimal:
    record = snapshot.claim(claim) if claim else None
    if record is None:
        return Decimal(0)
    try:
        return Decimal(record.metadata.annotations.get(ANNOTATION_HOURLY_PRICING, "0"))
    except InvalidOperation:
        return Decimal(0)


def _need(resource: ResourceAmount | None, dim: str) -> Quantity:
    value = getattr(resource, dim, None) if resource else None
    return value if isinstance(value, Quantity) else ZERO


@dataclass(frozen=True)
class _Pool:
    """What the guards read once per run."""

    nodes: dict[str, Node]
    live: set[str]  # claims that count
    schedulable: list[str]  # nodes a worker may move to
    disrupting: int
    count: int  # the pool's nodes, those going away included (what a budget's percentage is of)
    totals: dict[str, Quantity]
    available: dict[str, Quantity]


def _read_pool(snapshot: PoolSnapshot) -> _Pool:
    live = {c.name for c in snapshot.claims if claim_counts(c)}
    nodes: dict[str, Node] = {}
    schedulable: list[str] = []
    disrupting = gone = 0
    counted = []
    for node in snapshot.nodes:
        owner = node_claim(node)
        if owner is not None and owner not in live:
            disrupting += 1
            gone += 1
            continue
        nodes[node.name] = node
        gpu_node = snapshot.gpu_node(node.name)
        if gpu_node is not None and gpu_node.status is not None:
            counted.append(gpu_node.status)
        going = node.spec.unschedulable or node.metadata.labels.get(LABEL_SHOULD_DELETE) == "true"
        if going:
            disrupting += 1
        elif node.is_ready():
            schedulable.append(node.name)
    dims = ("tflops", "vram")
    return _Pool(
        nodes=nodes,
        live=live,
        schedulable=schedulable,
        disrupting=disrupting,
        count=len(nodes) + gone,
        totals={d: sum_quantities(getattr(s, f"total_{d}") or ZERO for s in counted) for d in dims},
        available={d: sum_quantities(getattr(s, f"available_{d}") or ZERO for s in counted) for d in dims},
    )


def _node_guard(
    snapshot: PoolSnapshot, node: Node, pool: _Pool, now: datetime, protection: timedelta
) -> str | None:
    """Why `node` may not be drained at all (None: it may, if its workers fit elsewhere)."""
    name, owner = node.name, node_claim(node)
    gpu_node = snapshot.gpu_node(name)
    claim = snapshot.claim(owner) if owner else None
    created = node.metadata.creation_timestamp
    if gpu_node is None or gpu_node.status is None or gpu_node.status.total_tflops is None:
        return "GPU capacity not reported yet"
    if claim is None or claim_phase(claim) != "Bound":
        return "its claim is not Bound"
    if name not in pool.schedulable:
        return "cordoned, not Ready or already going away"
    if created is None or now - created < protection:
        return f"younger than the {protection} protection window"
    if do_not_disrupt(node, gpu_node):
        return "do-not-disrupt"
    if not snapshot.pods_known(name):
        return "its pods were not read"
    if not snapshot.workers_on(name):
        return "empty (WhenEmpty's)"
    protected = [_pod_key(p) for p in snapshot.workers_on(name) if _pod_protected(p)]
    if protected:
        return f"pod {protected[0]} is do-not-disrupt"
    return None


def _pdb_guard(workers: Sequence[Pod], pdbs: Iterable[DisruptionAllowance]) -> str | None:
    for pdb in pdbs:
        covered = [
            p
            for p in workers
            if (p.metadata.namespace or "default") == pdb.namespace
            and selector_matches(pdb.selector, p.metadata.labels)
        ]
        if len(covered) > pdb.disruptions_allowed:
            return (
                f"PodDisruptionBudget {pdb.namespace}/{pdb.name} allows {pdb.disruptions_allowed} "
                f"disruption(s), the node holds {len(covered)} pod(s) it covers"
            )
    return None


def _capacity_guard(snapshot: PoolSnapshot, pool: _Pool, name: str) -> str | None:
    config = snapshot.pool.spec.capacity_config
    warm = config.warm_resources if config else None
    minimum = config.min_resources if config else None
    status = snapshot.gpu_node(name).status  # type: ignore[union-attr]
    assert status is not None
    short = []
    for dim in ("tflops", "vram"):
        node_total = getattr(status, f"total_{dim}") or ZERO
        # The workers move, so what stays allocated is unchanged: available falls by the node's total.
        after_total, after_avail = pool.totals[dim] - node_total, pool.available[dim] - node_total
        if after_total < (need := _need(minimum, dim)):
            short.append(f"total {dim} would drop to {after_total} < {need}")
        if after_avail < (need := _need(warm, dim)):
            short.append(f"available {dim} would drop to {after_avail} < {need}")
    return "; ".join(short) or None


def _size(request: GpuRequest) -> tuple[int, int, int, int]:
    percent = int((request.compute_percent_request or 0) * 1000)
    return (request.gpu_count, int(request.dedicated), request.tflops_request + percent, request.vram_request)


def _fits_elsewhere(
    snapshot: PoolSnapshot, gpus: Sequence[GPU], pool: _Pool, name: str
) -> tuple[tuple[Move, ...] | None, str]:
    """Where each worker of `name` would go on the other schedulable nodes, by the allocator's
    own filters and placement; None and the reason when one would not fit."""
    workers = snapshot.workers_on(name)
    targets = [n for n in pool.schedulable if n != name]
    target_set = set(targets)
    infos = {g.name: info for g in gpus if (info := gpu_info(g)) is not None}
    by_name = {n: i for n, i in infos.items() if i.node == name}
    requests: list[GpuRequest] = []
    for pod in workers:
        try:
            request = request_from_pod(pod, default_pool=snapshot.name)
            held = allocation_from_pod(pod, by_name, default_pool=snapshot.name)
        except RequestError as error:
            return None, f"pod {_pod_key(pod)}: {error}"
        if held is None:
            return None, f"pod {_pod_key(pod)}: no recorded allocation on this node's GPUs"
        requests.append(request)
    if not targets:
        return None, "no other schedulable node"
    allocator, _warnings = rebuild_allocator(
        gpus=[g for g in gpus if g.name in infos and infos[g.name].node in target_set],
        pods=[p for n in targets for p in snapshot.workers_on(n)],
        pools=(snapshot.pool,),
        default_pool=snapshot.name,
    )
    moves = []
    for request in sorted(requests, key=_size, reverse=True):
        try:
            allocation = allocator.reserve(request, among=targets)
        except AllocationError as error:
            return None, f"pod {request.key} fits no other node ({error})"
        moves.append(Move(pod=request.key, node=allocation.node, gpus=allocation.gpus))
    return tuple(moves), ""


def select_consolidation(
    snapshot: PoolSnapshot,
    gpus: Sequence[GPU],
    *,
    pdbs: Sequence[DisruptionAllowance] = (),
    now: datetime,
    protection: timedelta,
) -> tuple[Consolidation | None, list[str]]:
    """The node to drain now and the moves that prove its workers fit, or None; the reasons."""
    name = snapshot.name
    config = snapshot.pool.spec.node_manager_config.node_compaction or NodeCompaction()
    if config.policy != "WhenUnderutilized":
        return None, [f"pool {name}: nodeCompaction.policy {config.policy}: no consolidation"]
    in_flight = [
        c.name for c in snapshot.claims if claim_counts(c) and claim_phase(c) in ("Pending", "Creating")
    ]
    if in_flight:
        return None, [f"pool {name}: {len(in_flight)} claim(s) in flight; consolidation waits"]
    pool = _read_pool(snapshot)
    allowed, why = allowed_disruptions(config.budgets, nodes=pool.count, disrupting=pool.disrupting, now=now)
    if allowed < 1:
        return None, [f"pool {name}: consolidation waits: {why}"]
    reasons: list[str] = []
    window_hours = Decimal(str(duration_seconds(config.consolidation_window))) / 3600
    threshold = Decimal(config.savings_threshold)
    ranked = []
    for node in pool.nodes.values():
        refused = _node_guard(snapshot, node, pool, now, protection)
        if refused is not None:
            if refused != "empty (WhenEmpty's)":
                reasons.append(f"node {node.name}: not consolidated: {refused}")
            continue
        price = _price(snapshot, node_claim(node))
        ranked.append((len(snapshot.workers_on(node.name)), -price, node.name, price))
    for _count, _neg, node_name, price in sorted(ranked)[:MAX_CANDIDATES]:
        saving = price * window_hours
        refused = (
            f"saves ${saving:.4f} over {config.consolidation_window}, not above the threshold ${threshold}"
            if saving <= threshold
            else _pdb_guard(snapshot.workers_on(node_name), pdbs)
            or _capacity_guard(snapshot, pool, node_name)
        )
        if refused is not None:
            reasons.append(f"node {node_name}: not consolidated: {refused}")
            continue
        moves, why_not = _fits_elsewhere(snapshot, gpus, pool, node_name)
        if moves is None:
            reasons.append(f"node {node_name}: not consolidated: {why_not}")
            continue
        reasons.append(f"pool {name}: {why}")
        choice = Consolidation(node_name, node_claim(pool.nodes[node_name]), moves, price, saving)
        return choice, reasons
    return None, reasons


def _hand_to_karpenter(
    snapshot: PoolSnapshot, choice: Consolidation, message: str, reasons: list[str]
) -> Plan:
    """AutoSelect: gpupool moves the workers (cordon, drain) and then says what Karpenter reads —
    `should-delete`, and the `karpenter.sh/do-not-disrupt` gpupool set taken away — so Karpenter's
    consolidation removes the node once it is empty. A node Karpenter does not own: nobody would
    remove it, so nothing is drained (a reason says so)."""
    pool = snapshot.pool
    node = next((n for n in snapshot.nodes if n.name == choice.node), None)
    if node is None or LABEL_NODEPOOL not in node.metadata.labels:
        return Plan(reasons=(*reasons, f"{message}; not drained: no Karpenter NodePool owns it to remove it"))
    actions: list[Action] = [
        CordonNode(pool=pool.name, node=choice.node),
        DrainNode(pool=pool.name, node=choice.node),
        LabelNode(
            pool=pool.name,
            node=choice.node,
            labels={LABEL_SHOULD_DELETE: "true"},
            annotations=released_guard(node),
        ),
        RecordEvent(
            pool=pool.name,
            node=choice.node,
            object_kind="GPUPool",
            object_name=pool.name,
            reason=EVENT_COMPACTION,
            message=message,
        ),
    ]
    return Plan(actions=tuple(actions), reasons=(*reasons, f"{message}: drain, then Karpenter removes it"))


def plan_consolidation(
    snapshot: PoolSnapshot,
    gpus: Sequence[GPU],
    *,
    pdbs: Sequence[DisruptionAllowance] = (),
    now: datetime,
    protection: timedelta,
) -> Plan:
    """Cordon, drain and delete the claim of the node `select_consolidation` picks (see module
    docstring); AutoSelect pools get the reason only."""
    choice, reasons = select_consolidation(snapshot, gpus, pdbs=pdbs, now=now, protection=protection)
    if choice is None:
        return Plan(reasons=tuple(reasons))
    pool = snapshot.pool
    targets = sorted({m.node for m in choice.moves})
    message = (
        f"node {choice.node}: its {len(choice.moves)} worker(s) fit the free GPUs of "
        f"{', '.join(targets)}; saves ${choice.hourly_saving}/h (${choice.window_saving:.2f} over the window)"
    )
    if pool.spec.node_manager_config.provisioning_mode == "AutoSelect" or choice.claim is None:
        return _hand_to_karpenter(snapshot, choice, message, reasons)
    instance = None
    claim = snapshot.claim(choice.claim)
    if claim is not None and claim.status is not None:
        instance = claim.status.instance_id
    actions: list[Action] = [
        CordonNode(pool=pool.name, claim=choice.claim, node=choice.node, instance_id=instance),
        DrainNode(pool=pool.name, claim=choice.claim, node=choice.node, instance_id=instance),
        DeleteClaim(pool=pool.name, claim=choice.claim, node=choice.node, reason="Consolidation"),
        RecordEvent(
            pool=pool.name,
            node=choice.node,
            claim=choice.claim,
            object_kind="GPUPool",
            object_name=pool.name,
            reason=EVENT_COMPACTION,
            message=message,
        ),
    ]
    return Plan(actions=tuple(actions), reasons=(*reasons, f"{message}: drain"))
