"""The compact entry point: remove idle capacity a pool does not need, re-validating each removal.

Role: `handle_compact(cause, deps, *, dry_run=False) -> Outcome` for Compact causes. For every
pool whose nodeCompaction.period elapsed (or manual compaction was asked for — the cause or the
pool's manual-compaction annotation) it takes the pool's Lease (`pool_lease`, the one launch
holds, so a launch never fills a gap from a snapshot this removal is about to change, nor the
reverse), then reads the cluster once (`invocation_cluster`: claims, node summaries, GPUNodes) and
plans with plan_compaction, which narrows to idle candidates from GPUNode status; the pods of
each node it would remove are read (`spec.nodeName` field selector, TensorFusion pods by
`core.vocabulary.pods`) and the plan made again until every removal stands on read pods. Right
before each removal the node's pods are read again and the decision re-run (from the second
removal on, on the cluster read again), applying the removal only if it still stands (so warm /
min hold node by node even when things changed meanwhile). Records the run time in the pool's
status.lastCompactionTime and keeps the status true. A pool with `nodeCompaction.policy:
WhenUnderutilized` whose run removed nothing then consolidates: every node's pods, the pool's
GPU objects and the PodDisruptionBudgets read, `plan_consolidation` decides, the same read and
decision are made again right before the drain, and a drain an eviction refused makes the node
schedulable again.

Must not: decide itself, or remove anything the fresh decision no longer removes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from gpupool.core.decisions.compaction import (
    compaction_due,
    consolidation_enabled,
    plan_compaction,
    unconfirmed_removals,
)
from gpupool.core.decisions.pool_status import plan_pool_status
from gpupool.core.intake.routing import CompactCause
from gpupool.core.model.common import LabelSelector
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.planning.plan import (
    Action,
    CordonNode,
    DeleteClaim,
    DrainNode,
    LabelNode,
    PatchPoolStatus,
    Plan,
    RecordEvent,
)
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.service.deps import Deps
from gpupool.service.errors import DomainError, NotFound
from gpupool.service.executor import Executor
from gpupool.service.invocation_cluster import InvocationCluster, reading_once
from gpupool.service.outcome import Outcome, acknowledge
from gpupool.service.pool_lease import PoolLease
from gpupool.service.pools import ClusterReads, select_pools, snapshot_of, with_pods_of
from gpupool.service.results import record_results

__all__ = ["handle_compact"]


def handle_compact(cause: object, deps: Deps, *, dry_run: bool = False) -> Outcome:
    if not isinstance(cause, CompactCause):
        return acknowledge(cause, function="compact")
    deps = reading_once(deps)
    outcome = Outcome()
    executor = Executor(deps, event_id=cause.event_id, dry_run=dry_run)
    try:
        pools = select_pools(deps.cluster, cause.pool)
    except DomainError as error:
        outcome.fail(f"reading pools: {error.message}", retryable=error.retryable)
        return outcome
    if cause.pool and not pools:
        outcome.note(f"pool {cause.pool} not found")
    now = deps.clock.now()
    due: list[tuple[str, str]] = []
    for pool in pools:
        runs, why = compaction_due(
            PoolSnapshot(cluster_name=deps.settings.cluster_name, pool=pool), now=now, manual=cause.manual
        )
        if runs:
            due.append((pool.name, why))
        else:
            outcome.note(f"pool {pool.name}: {why}")
    leases = _hold_leases([name for name, _why in due], deps, outcome, dry_run=dry_run)
    try:
        for name, why in due:
            lease = leases.get(name)
            if lease is None:
                continue
            try:
                _compact_held_pool(name, why, deps, executor, outcome, lease, dry_run=dry_run)
            except DomainError as error:
                outcome.fail(
                    f"pool {name}: {type(error).__name__}: {error.message}", retryable=error.retryable
                )
    finally:
        for lease in leases.values():
            lease.release()
    return outcome


def _hold_leases(names: list[str], deps: Deps, outcome: Outcome, *, dry_run: bool) -> dict[str, PoolLease]:
    """The Lease of each due pool, taken before the cluster is read for them."""
    held: dict[str, PoolLease] = {}
    for name in names:
        lease = PoolLease(deps, name, dry_run=dry_run)
        try:
            taken = lease.hold()
        except DomainError as error:
            outcome.fail(f"pool {name}: {type(error).__name__}: {error.message}", retryable=error.retryable)
            continue
        if taken:
            held[name] = lease
        else:
            outcome.note(f"pool {name}: another invocation holds the pool's lease; compaction waits for it")
    return held


def _snapshot(deps: Deps, name: str, reads: ClusterReads) -> PoolSnapshot | None:
    try:
        pool = deps.cluster.get_pool(name)
    except NotFound:
        return None
    return snapshot_of(deps, pool, reads)


def _confirmed(
    deps: Deps, name: str, reads: ClusterReads, now: datetime, *, cut: PoolSnapshot | None = None
) -> tuple[PoolSnapshot | None, Plan, ClusterReads]:
    """plan_compaction on a snapshot holding the pods of every node it removes (read as needed);
    `cut`: the pool's snapshot already cut from reads that differ from `reads` only in pods."""
    protection = deps.settings.new_node_protection
    snapshot = with_pods_of(cut, reads) if cut is not None else _snapshot(deps, name, reads)
    if snapshot is None:
        return None, Plan(), reads
    while True:
        plan = plan_compaction(snapshot, now=now, protection=protection)
        unread = unconfirmed_removals(snapshot, plan)
        if not unread:
            return snapshot, plan, reads
        reads = reads.with_pods_on(deps.cluster, unread)
        snapshot = with_pods_of(snapshot, reads)


def _removals(plan: Plan) -> list[tuple[Action, ...]]:
    """Each removal with the event that follows it."""
    groups: list[tuple[Action, ...]] = []
    for action in plan.actions:
        if isinstance(action, DeleteClaim | LabelNode):
            groups.append((action,))
        elif isinstance(action, RecordEvent) and groups:
            groups[-1] = (*groups[-1], action)
    return groups


def _same_removal(first: Action, second: Action) -> bool:
    same = all(first.targets().get(k) == second.targets().get(k) for k in ("claim", "node"))
    return type(first) is type(second) and same


def _before_removal(deps: Deps, removal: Action, reads: ClusterReads, *, again: bool) -> ClusterReads:
    """`reads` as they are right before `removal`: its node's pods read again and, once an
    earlier removal was applied (`again`), the pool, claims, nodes and GPUNodes read again too."""
    if again:
        if isinstance(deps.cluster, InvocationCluster):
            deps.cluster.refresh()
        reads = replace(ClusterReads.load(deps), pods=reads.pods, pods_read_on=reads.pods_read_on)
    node = removal.targets().get("node")
    return reads.with_pods_on(deps.cluster, (node,)) if node is not None else reads


def _compact_held_pool(
    name: str,
    why: str,
    deps: Deps,
    executor: Executor,
    outcome: Outcome,
    lease: PoolLease,
    *,
    dry_run: bool,
) -> None:
    now = deps.clock.now()
    snapshot, plan, reads = _confirmed(deps, name, ClusterReads.load(deps), now)
    if snapshot is None:
        outcome.note(f"pool {name} disappeared")
        return
    outcome.plan = outcome.plan + Plan(reasons=(f"pool {name}: compaction runs: {why}", *plan.reasons))
    applied = 0
    for group in _removals(plan):
        removal = group[0]
        if not lease.hold():  # renew before each removal; lost it → stop, the next run re-decides
            outcome.note(f"pool {name}: the pool's lease was lost; compaction stops here")
            return
        if not dry_run:
            reads = _before_removal(deps, removal, reads, again=applied > 0)
            cut = snapshot if applied == 0 else None  # nothing but the node's pods was read again
            _fresh, again, reads = _confirmed(deps, name, reads, deps.clock.now(), cut=cut)
            if not any(_same_removal(removal, a) for a in again.actions):
                node = removal.targets().get("node")
                outcome.note(f"node {node}: no longer removable on re-validation; kept")
                continue
        step = Plan(actions=group)
        record_results(outcome, Plan(actions=group), executor.apply(step))
        applied += 1
    if applied == 0 and consolidation_enabled(snapshot) and lease.hold():
        _consolidate(name, deps, executor, outcome, dry_run=dry_run)
    final = _snapshot(deps, name, ClusterReads.load(deps)) or snapshot
    stamp = PatchPoolStatus(
        pool=name,
        status=(final.pool.status or GPUPoolStatus()).model_copy(update={"last_compaction_time": now}),
        fields=("last_compaction_time",),
    )
    closing = Plan(actions=(stamp,)) + plan_pool_status(final, now=deps.clock.now())
    record_results(outcome, closing, executor.apply(closing))


def _consolidation_plan(deps: Deps, name: str) -> Plan:
    """plan_consolidation on a fresh read of the pool: every node's pods and the pool's GPUs."""
    # Imported here: the allocator (and numpy) load only for a pool that opted in, not on every
    # compact cold start.
    from gpupool.core.allocator.build import gpu_info
    from gpupool.core.decisions.consolidation import DisruptionAllowance, plan_consolidation

    reads = ClusterReads.load(deps)
    snapshot = _snapshot(deps, name, reads)
    if snapshot is None:
        return Plan()
    reads = reads.with_pods_on(deps.cluster, tuple(n.name for n in snapshot.nodes))
    snapshot = with_pods_of(snapshot, reads)
    names = {n.name for n in snapshot.nodes}
    gpus = [g for g in deps.cluster.list_gpus() if (info := gpu_info(g)) is not None and info.node in names]
    pdbs = [
        DisruptionAllowance(
            namespace=pdb.metadata.namespace or "default",
            name=pdb.name,
            selector=pdb.spec.selector or LabelSelector(),
            disruptions_allowed=pdb.status.disruptions_allowed,
        )
        for pdb in deps.cluster.list_pod_disruption_budgets()
        if pdb.spec.selector is not None  # a PDB with no selector selects no pod (policy/v1)
    ]
    protection = deps.settings.new_node_protection
    return plan_consolidation(snapshot, gpus, pdbs=pdbs, now=deps.clock.now(), protection=protection)


def _consolidate(name: str, deps: Deps, executor: Executor, outcome: Outcome, *, dry_run: bool) -> None:
    """WhenUnderutilized: when compaction removed nothing, drain the one node consolidation picks,
    deciding again on a fresh read right before (DESIGN: re-validate before destroying)."""
    if isinstance(deps.cluster, InvocationCluster):
        deps.cluster.refresh()
    plan = _consolidation_plan(deps, name)
    if not plan.actions:
        outcome.plan = outcome.plan + plan
        return
    if not dry_run:
        if isinstance(deps.cluster, InvocationCluster):
            deps.cluster.refresh()
        again = _consolidation_plan(deps, name)
        if again.actions != plan.actions:
            outcome.plan = outcome.plan + Plan(reasons=plan.reasons)
            outcome.note(f"pool {name}: consolidation no longer stands on re-validation; nothing drained")
            return
    results = executor.apply(plan)
    record_results(outcome, plan, results)
    drain = next((r for r in results if isinstance(r.action, DrainNode)), None)
    if drain is not None and drain.outcome == "failed":
        # The node stays: make it schedulable again rather than leave capacity cordoned.
        cordon = next(a for a in plan.actions if isinstance(a, CordonNode))
        undo = Plan(actions=(cordon.model_copy(update={"uncordon": True}),))
        record_results(outcome, undo, executor.apply(undo))
