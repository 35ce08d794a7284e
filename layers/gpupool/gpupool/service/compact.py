"""The compact entry point: remove idle capacity a pool does not need, re-validating each removal.

Role: `handle_compact(cause, deps, *, dry_run=False) -> Outcome` for Compact causes. Per pool
whose nodeCompaction.period elapsed (or manual compaction was asked for — the cause or the
pool's manual-compaction annotation), holding the pool's Lease (`pool_lease`, the one launch
holds, so a launch never fills a gap from a snapshot this removal is about to change, nor the
reverse): plan_compaction on a fresh snapshot; then, right before
each removal, re-read the pool and re-run the decision, applying the removal only if it
still stands (so warm / min hold node by node even when things changed meanwhile). Records
the run time in the pool's status.lastCompactionTime and keeps the status true.

Must not: decide itself, or remove anything the fresh decision no longer removes.
"""

from __future__ import annotations

from gpupool.core.decisions.compaction import compaction_due, plan_compaction
from gpupool.core.decisions.pool_status import plan_pool_status
from gpupool.core.intake.routing import CompactCause
from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.planning.plan import Action, DeleteClaim, LabelNode, PatchPoolStatus, Plan, RecordEvent
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.service.deps import Deps
from gpupool.service.errors import DomainError, NotFound
from gpupool.service.executor import Executor
from gpupool.service.outcome import Outcome, acknowledge
from gpupool.service.pool_lease import PoolLease
from gpupool.service.pools import ClusterReads, select_pools, snapshot_of
from gpupool.service.results import record_results

__all__ = ["handle_compact"]


def handle_compact(cause: object, deps: Deps, *, dry_run: bool = False) -> Outcome:
    if not isinstance(cause, CompactCause):
        return acknowledge(cause, function="compact")
    outcome = Outcome()
    executor = Executor(deps, event_id=cause.event_id, dry_run=dry_run)
    try:
        pools = select_pools(deps, cause.pool)
    except DomainError as error:
        outcome.fail(f"reading pools: {error.message}", retryable=error.retryable)
        return outcome
    if cause.pool and not pools:
        outcome.note(f"pool {cause.pool} not found")
    for pool in pools:
        try:
            _compact_pool(pool.name, deps, executor, outcome, manual=cause.manual, dry_run=dry_run)
        except DomainError as error:
            outcome.fail(
                f"pool {pool.name}: {type(error).__name__}: {error.message}", retryable=error.retryable
            )
    return outcome


def _fresh(deps: Deps, name: str) -> PoolSnapshot | None:
    try:
        pool = deps.cluster.get_pool(name)
    except NotFound:
        return None
    return snapshot_of(deps, pool, ClusterReads.load(deps))


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


def _compact_pool(
    name: str, deps: Deps, executor: Executor, outcome: Outcome, *, manual: bool, dry_run: bool
) -> None:
    lease = PoolLease(deps, name, dry_run=dry_run)
    if not lease.hold():
        outcome.note(f"pool {name}: another invocation holds the pool's lease; compaction waits for it")
        return
    try:
        _compact_held_pool(name, deps, executor, outcome, lease, manual=manual, dry_run=dry_run)
    finally:
        lease.release()


def _compact_held_pool(
    name: str,
    deps: Deps,
    executor: Executor,
    outcome: Outcome,
    lease: PoolLease,
    *,
    manual: bool,
    dry_run: bool,
) -> None:
    protection = deps.settings.new_node_protection
    snapshot = _fresh(deps, name)
    if snapshot is None:
        outcome.note(f"pool {name} disappeared")
        return
    now = deps.clock.now()
    due, why = compaction_due(snapshot, now=now, manual=manual)
    if not due:
        outcome.note(f"pool {name}: {why}")
        return
    plan = plan_compaction(snapshot, now=now, protection=protection)
    outcome.plan = outcome.plan + Plan(reasons=(f"pool {name}: compaction runs: {why}", *plan.reasons))
    for group in _removals(plan):
        removal = group[0]
        if not lease.hold():  # renew before each removal; lost it → stop, the next run re-decides
            outcome.note(f"pool {name}: the pool's lease was lost; compaction stops here")
            return
        if not dry_run:
            fresh = _fresh(deps, name)
            again = plan_compaction(fresh, now=deps.clock.now(), protection=protection) if fresh else Plan()
            if not any(_same_removal(removal, a) for a in again.actions):
                node = removal.targets().get("node")
                outcome.note(f"node {node}: no longer removable on re-validation; kept")
                continue
        step = Plan(actions=group)
        record_results(outcome, Plan(actions=group), executor.apply(step))
    final = _fresh(deps, name) or snapshot
    stamp = PatchPoolStatus(
        pool=name,
        status=(final.pool.status or GPUPoolStatus()).model_copy(update={"last_compaction_time": now}),
        fields=("last_compaction_time",),
    )
    closing = Plan(actions=(stamp,)) + plan_pool_status(final, now=deps.clock.now())
    record_results(outcome, closing, executor.apply(closing))
