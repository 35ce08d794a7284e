"""A pool as the status view shows it: capacity against min / warm / max, the gap, its claims,
what it costs against its budget, its warnings and the latest decisions about it.

Role: `pool_view(pool, objects, now=…)`. The pool's objects are cut by the core's one membership
rule (`planning.membership.pool_snapshot`); an AutoSelect pool also owns the expansion NodeClaims
billed to it (`gpupool.io/expansion-pool`) and the nodes Karpenter made for them. Capacity, gap,
hourly cost and budget use are the numbers the launch function emits (`planning.pool_gauges.
measure_pool`, on the same snapshot); an AutoSelect pool's cost is its expansions' run rate
(`decisions.autoselect_budget`). Warnings: false status conditions, `status.budgetExceeded`,
maxResources reached, a cost past the budget ceiling, stuck claims, nodes not ready or with an
unusable GPU, pods waiting for GPU capacity, and Warning Events. Decisions: the newest Events
(`DECISIONS` of them) about the pool, its claims (also claims since deleted, named
`<pool>-<suffix>` as launch names them), its nodes, NodeClaims and pods.

Must not: perform I/O, read the clock (`now` is passed in) or decide anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from gpupool.core.decisions.autoselect_budget import ANNOTATION_EXPANSION_POOL, expansion_hourly
from gpupool.core.decisions.lifecycle.facts import LifecyclePolicy
from gpupool.core.model.constants import COMPONENT_WORKER, LABEL_COMPONENT
from gpupool.core.model.event import Event
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPUNode
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool, ResourceAmount
from gpupool.core.planning.budget import BudgetError, tightest_limit
from gpupool.core.planning.gap import capacity_gap
from gpupool.core.planning.membership import ClusterObjects, pool_snapshot
from gpupool.core.planning.pool_gauges import measure_pool
from gpupool.core.planning.snapshot import PoolSnapshot, pool_capacity
from gpupool.core.quantity import Quantity
from gpupool.core.views.claims import claim_view, nodeclaim_view
from gpupool.core.views.facts import Amount, Budget, ClaimView, Decision, PoolView
from gpupool.core.vocabulary.pods import is_unschedulable, pool_of

__all__ = ["DECISIONS", "PoolObjects", "pool_view", "related_events"]

DECISIONS = 8
STUCK_SHOWN = 3  # stuck claims named in the warnings (each claim's row says it too)
_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class PoolObjects:
    """Everything read from the cluster that a pool's view is cut from."""

    claims: Sequence[GPUNodeClaim] = ()
    nodes: Sequence[Node] = ()
    gpu_nodes: Sequence[GPUNode] = ()
    pods: Sequence[Pod] = ()  # TensorFusion pods: workers and those waiting
    nodeclaims: Sequence[KarpenterNodeClaim] = ()
    events: Sequence[Event] = ()


def _number(value: Quantity | None) -> float | None:
    return float(value.value) if value is not None else None


def _target(resource: ResourceAmount | None, dimension: str) -> float | None:
    return _number(getattr(resource, dimension)) if resource is not None else None


def _expansions(pool: GPUPool, nodeclaims: Sequence[KarpenterNodeClaim]) -> list[KarpenterNodeClaim]:
    return [nc for nc in nodeclaims if nc.metadata.annotations.get(ANNOTATION_EXPANSION_POOL) == pool.name]


def _snapshot(pool: GPUPool, objects: PoolObjects, expansions: Sequence[KarpenterNodeClaim]) -> PoolSnapshot:
    workers = tuple(p for p in objects.pods if p.metadata.labels.get(LABEL_COMPONENT) == COMPONENT_WORKER)
    cut = pool_snapshot("", pool, ClusterObjects(objects.claims, objects.nodes, objects.gpu_nodes, workers))
    made = {nc.status.node_name for nc in expansions if nc.status.node_name}
    have = {n.name for n in cut.nodes}
    extra = [n for n in objects.nodes if n.name in made and n.name not in have]
    if not extra:
        return cut
    names = {n.name for n in (*cut.nodes, *extra)}
    return cut.model_copy(
        update={
            "nodes": (*cut.nodes, *extra),
            "gpu_nodes": tuple(g for g in objects.gpu_nodes if g.name in names),
            "worker_pods": tuple(p for p in workers if p.spec.node_name in names),
        }
    )


def _amounts(pool: GPUPool, snapshot: PoolSnapshot) -> tuple[Amount, Amount, bool, tuple[str, ...]]:
    capacity = pool_capacity(snapshot)
    gap = capacity_gap(pool, capacity)
    config = pool.spec.capacity_config
    amounts = []
    for dimension, total, available, in_flight, need in (
        (
            "tflops",
            capacity.total_tflops,
            capacity.available_tflops,
            capacity.in_flight_tflops,
            gap.need.tflops,
        ),
        ("vram", capacity.total_vram, capacity.available_vram, capacity.in_flight_vram, gap.need.vram),
    ):
        amounts.append(
            Amount(
                total=float(total.value),
                available=float(available.value),
                in_flight=float(in_flight.value),
                minimum=_target(config.min_resources if config else None, dimension),
                warm=_target(config.warm_resources if config else None, dimension),
                maximum=_target(config.max_resources if config else None, dimension),
                gap=float(need),
            )
        )
    return amounts[0], amounts[1], gap.max_reached, gap.reasons


def _cost(
    pool: GPUPool, snapshot: PoolSnapshot, expansions: Sequence[KarpenterNodeClaim]
) -> tuple[float, Budget | None, str | None]:
    """The hourly cost, the budget with its use, and why the budget cannot be read (if so)."""
    if pool.spec.node_manager_config.provisioning_mode == "AutoSelect":
        launched = [
            nc
            for nc in expansions
            if not any(c.type == "Launched" and c.status == "False" for c in nc.status.conditions)
        ]
        hourly = sum((expansion_hourly(nc, ()) or Decimal(0) for nc in launched), Decimal(0))
    else:
        hourly = Decimal(str(measure_pool(snapshot).hourly_cost))
    provisioner = pool.spec.node_manager_config.node_provisioner
    budget = provisioner.budget if provisioner else None
    if budget is None:
        return float(hourly), None, None
    try:
        limit = tightest_limit(budget)
    except BudgetError as error:
        return float(hourly), None, f"nodeProvisioner.budget cannot be read: {error}"
    ceiling = limit.hourly
    use = round(float(100 * hourly / ceiling), 3) if ceiling > 0 else None
    shown = Budget(
        field=limit.field,
        amount=float(limit.amount),
        hourly_ceiling=round(float(ceiling), 6),
        use_percent=use,
        strategy=budget.budget_exceed_strategy,
    )
    return float(hourly), shown, None


def related_events(
    pool: GPUPool, snapshot: PoolSnapshot, expansions: Sequence[KarpenterNodeClaim], objects: PoolObjects
) -> list[Event]:
    """The Events about the pool, its claims, nodes, NodeClaims and pods, newest first."""
    claims = {c.name for c in snapshot.claims}
    nodes = {n.name for n in snapshot.nodes}
    nodeclaims = {nc.name for nc in expansions}
    pods = {(p.metadata.namespace or "default", p.name) for p in objects.pods if pool_of(p) == pool.name}
    prefix = f"{pool.name}-"

    def about_pool(event: Event) -> bool:
        target = event.involved_object
        if target.kind == "GPUPool":
            return target.name == pool.name
        if target.kind == "GPUNodeClaim":
            return target.name in claims or target.name.startswith(prefix)
        if target.kind in ("Node", "GPUNode"):
            return target.name in nodes
        if target.kind == "NodeClaim":
            return target.name in nodeclaims
        if target.kind == "Pod":
            return (target.namespace or event.metadata.namespace or "default", target.name) in pods
        return False

    found = [e for e in objects.events if about_pool(e)]
    return sorted(found, key=_newest_first, reverse=True)


def _newest_first(event: Event) -> tuple[datetime, str, int]:
    """Events in one second about one object are told apart by the order the API server stored them
    (a numeric resourceVersion), so the view never depends on the order a list returned them in."""
    version = event.metadata.resource_version or ""
    return (event.last_seen() or _NEVER, event.involved_object.name, int(version) if version.isdigit() else 0)


def _decision(event: Event) -> Decision:
    target = event.involved_object
    name = f"{target.namespace}/{target.name}" if target.kind == "Pod" and target.namespace else target.name
    return Decision(
        at=event.last_seen(),
        type=event.type,
        reason=event.reason,
        object=f"{target.kind}/{name}",
        message=event.message,
        count=event.count or 1,
    )


def _warnings(
    pool: GPUPool,
    claims: Sequence[ClaimView],
    snapshot: PoolSnapshot,
    objects: PoolObjects,
    events: Sequence[Event],
    extra: Sequence[str],
) -> tuple[str, ...]:
    found: list[str] = list(extra)
    status = pool.status
    if status is not None:
        found += [
            f"{c.type}: {c.message or c.reason or 'False'}" for c in status.conditions if c.status == "False"
        ]
        if status.budget_exceeded:
            found.append(f"budget exceeded: {status.budget_exceeded}")
    stuck = [f"{c.kind} {c.name}: {c.stuck}" for c in claims if c.stuck]
    found += stuck[:STUCK_SHOWN]
    if len(stuck) > STUCK_SHOWN:
        found.append(f"and {len(stuck) - STUCK_SHOWN} more stuck claim(s)")
    for node in snapshot.nodes:
        gpu_node = snapshot.gpu_node(node.name)
        reported = gpu_node.status if gpu_node is not None else None
        if not node.is_ready():
            found.append(f"node {node.name} is not Ready")
        elif reported is not None and reported.total_tflops is not None and reported.phase != "Running":
            found.append(f"node {node.name}: GPUNode is {reported.phase}, its GPUs are no capacity")
    waiting = [p for p in objects.pods if pool_of(p) == pool.name and is_unschedulable(p)]
    if waiting:
        found.append(f"{len(waiting)} pod(s) wait for GPU capacity")
    seen: set[tuple[str, str]] = set()
    for event in events:
        key = (event.reason, event.involved_object.name)
        if event.type == "Warning" and key not in seen:
            seen.add(key)
            found.append(
                f"{event.reason} ({event.involved_object.kind}/{event.involved_object.name}): {event.message}"
            )
    return tuple(dict.fromkeys(found))


def pool_view(
    pool: GPUPool, objects: PoolObjects, *, now: datetime, policy: LifecyclePolicy | None = None
) -> PoolView:
    policy = policy or LifecyclePolicy()
    expansions = _expansions(pool, objects.nodeclaims)
    snapshot = _snapshot(pool, objects, expansions)
    tflops, vram, max_reached, gap_reasons = _amounts(pool, snapshot)
    claims = [
        claim_view(
            c,
            node=(found.name if (found := snapshot.node_of_claim(c.name)) else None),
            now=now,
            policy=policy,
        )
        for c in snapshot.claims
    ] + [nodeclaim_view(nc, now=now, policy=policy) for nc in expansions]
    claims.sort(key=lambda c: (c.created is None, c.created, c.name))
    hourly, budget, budget_problem = _cost(pool, snapshot, expansions)
    extra = [*gap_reasons, *([budget_problem] if budget_problem else [])]
    if budget is not None and budget.use_percent is not None and budget.use_percent > 100:
        extra.append(
            f"hourly cost ${hourly:.3f} passes the {budget.field} ceiling ${budget.hourly_ceiling:.3f}/h "
            f"({budget.strategy})"
        )
    events = related_events(pool, snapshot, expansions, objects)
    capacity = pool_capacity(snapshot)
    status = pool.status
    return PoolView(
        name=pool.name,
        mode=pool.spec.node_manager_config.provisioning_mode,
        phase=status.phase if status else None,
        provisioning_phase=status.provisioning_phase if status else None,
        tflops=tflops,
        vram=vram,
        nodes=capacity.nodes,
        ready_nodes=capacity.ready_nodes,
        gpus=capacity.gpus,
        max_reached=max_reached,
        claims=tuple(claims),
        hourly_cost=hourly,
        budget=budget,
        warnings=_warnings(pool, claims, snapshot, objects, events, extra),
        decisions=tuple(_decision(e) for e in events[:DECISIONS]),
        node_names=tuple(sorted(n.name for n in snapshot.nodes)),
    )
