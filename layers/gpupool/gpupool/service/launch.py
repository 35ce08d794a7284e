"""The launch entry point: close every (or one) pool's capacity gap, claim first, instance second.

Role: `handle_launch(cause, deps, *, dry_run=False) -> Outcome` for Reconcile causes. Keeps
GPUPools in sync with TensorFusionCluster.spec.gpuPools, then per pool: takes the pool's
Lease (`pool_lease`: two invocations never fill one gap twice, and a compaction never runs in
between — the loser reports that the pool is busy; the next trigger re-decides), and in
rounds: fresh snapshot → plan_launch → apply; launch failures become plan_launch_failure
plans (capacity errors mark the offering unavailable in the pool, so the next round picks the
next cheapest). Ends with the pool status.

Must not: decide itself (decisions are pure core functions) or keep state between invocations.
"""

from __future__ import annotations

from gpupool.core.decisions.karpenter_launch import plan_karpenter_unavailable
from gpupool.core.decisions.launch import plan_launch, plan_launch_failure
from gpupool.core.decisions.pool_status import plan_pool_status
from gpupool.core.intake.routing import LaunchCause
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import ApplyPool, LaunchInstance, LaunchNodeClaim, OfferingRef, Plan
from gpupool.core.planning.pool_gauges import measure_pool
from gpupool.service.autoselect import expand_autoselect
from gpupool.service.connection import refresh_connection_status
from gpupool.service.deps import Deps
from gpupool.service.errors import CapacityUnavailable, DomainError, NotFound, PermanentError
from gpupool.service.executor import ActionResult, Executor
from gpupool.service.outcome import Outcome, acknowledge
from gpupool.service.pool_lease import PoolLease
from gpupool.service.pools import ClusterReads, select_pools, snapshot_of, sync_cluster_pools
from gpupool.service.results import record_results

__all__ = ["handle_launch"]


def _handled(result: ActionResult) -> bool:
    """Launch failures the next decision handles (claim Failed, offering marked) are not errors."""
    return isinstance(result.action, LaunchInstance | LaunchNodeClaim) and isinstance(
        result.error, CapacityUnavailable | PermanentError
    )


def _record(outcome: Outcome, plan: Plan, results: list[ActionResult]) -> None:
    record_results(outcome, plan, results, handled=_handled)


def handle_launch(cause: object, deps: Deps, *, dry_run: bool = False) -> Outcome:
    """Reconcile one pool (`cause.pool`) or all; other causes are acknowledged with a reason."""
    if not isinstance(cause, LaunchCause):
        return acknowledge(cause, function="launch")
    outcome = Outcome()
    executor = Executor(deps, event_id=cause.event_id, dry_run=dry_run)
    try:
        sync_plan, sync_results = sync_cluster_pools(deps, executor)
        _record(outcome, sync_plan, sync_results)
        if cause.trigger.startswith("schedule") and cause.pool is None:  # ticks refresh the connection check
            refresh_connection_status(deps, executor, outcome)
        pools = select_pools(deps, cause.pool)
    except DomainError as error:
        outcome.fail(f"reading pools: {error.message}", retryable=error.retryable)
        return outcome
    # A dry run applied nothing: plan against the pools as the cluster sync would leave them.
    preview = _pools_after(sync_plan) if dry_run else {}
    by_name = {p.name: p for p in pools}
    by_name.update({n: p for n, p in preview.items() if cause.pool in (None, n)})
    pools = [by_name[n] for n in sorted(by_name)]
    if cause.pool and not pools:
        outcome.note(f"pool {cause.pool} not found")
    for pool in pools:
        try:
            _launch_pool(pool.name, deps, executor, outcome, dry_run=dry_run, preview=preview.get(pool.name))
        except DomainError as error:
            outcome.fail(
                f"pool {pool.name}: {type(error).__name__}: {error.message}", retryable=error.retryable
            )
    return outcome


def _pools_after(sync_plan: Plan) -> dict[str, GPUPool]:
    """The GPUPools a cluster-sync plan creates or updates, as they would be once applied."""
    return {a.pool: a.desired for a in sync_plan.actions if isinstance(a, ApplyPool) and a.pool}


def _launch_pool(
    name: str,
    deps: Deps,
    executor: Executor,
    outcome: Outcome,
    *,
    dry_run: bool,
    preview: GPUPool | None = None,
) -> None:
    cluster, settings = deps.cluster, deps.settings
    lease = PoolLease(deps, name, dry_run=dry_run)
    if not lease.hold():
        outcome.note(f"pool {name}: another invocation holds the pool's lease; the next trigger re-decides")
        return
    try:
        for _ in range(settings.max_launch_rounds):
            if not _launch_round(name, deps, executor, outcome, preview=preview) or dry_run:
                break
            if not lease.hold():  # renew before the next round; lost it → someone else continues
                outcome.note(f"pool {name}: the pool's lease was lost; another invocation continues")
                return
        try:
            snapshot = snapshot_of(deps, preview or cluster.get_pool(name), ClusterReads.load(deps))
        except NotFound:
            return
        status = plan_pool_status(snapshot, now=deps.clock.now())
        _record(outcome, status, executor.apply(status))
        outcome.gauges.append(measure_pool(snapshot))  # gap, cost, budget use: the handler emits them
    finally:
        lease.release()


def _launchable(deps: Deps, node_class: GPUNodeClass | None) -> list[OfferingRef]:
    """The offerings in zones the pool's node class can place an instance in: a zone without
    one of its subnets would only fail the launch (and a claim) before the next zone is tried."""
    zones = deps.compute.launchable_zones(node_class) if node_class is not None else None
    if zones is None:
        return list(deps.offerings)
    return [o for o in deps.offerings if o.zone is None or o.zone in zones]


def _launch_round(
    name: str, deps: Deps, executor: Executor, outcome: Outcome, *, preview: GPUPool | None = None
) -> bool:
    """One decide-and-apply round; True when a capacity error asks for another round. `preview`
    (dry runs only) is the pool as a not-applied cluster sync would leave it."""
    settings = deps.settings
    try:
        pool = preview or deps.cluster.get_pool(name)
    except NotFound:
        outcome.note(f"pool {name} disappeared")
        return False
    if pool.spec.node_manager_config.provisioning_mode == "AutoSelect":  # expands per pod instead
        expand_autoselect(pool, deps, executor, outcome)
        return False
    snapshot = snapshot_of(deps, pool, ClusterReads.load(deps))
    failed = plan_karpenter_unavailable(
        snapshot, now=deps.clock.now(), unavailable_for=settings.offering_unavailable_for
    )
    if failed.actions:  # Karpenter mode: offerings Karpenter could not launch are skipped for a while
        _record(outcome, failed, executor.apply(failed))
        snapshot = snapshot_of(deps, preview or deps.cluster.get_pool(name), ClusterReads.load(deps))
    suffixes = [deps.new_suffix() for _ in range(settings.max_nodes_per_plan)]
    plan = plan_launch(
        snapshot,
        _launchable(deps, snapshot.node_class),
        now=deps.clock.now(),
        suffixes=suffixes,
        max_nodes=settings.max_nodes_per_plan,
    )
    results = executor.apply(plan)
    _record(outcome, plan, results)
    again = False
    for result in results:
        action, error = result.action, result.error
        if not isinstance(action, LaunchInstance | LaunchNodeClaim) or not isinstance(
            error, CapacityUnavailable | PermanentError
        ):
            continue
        capacity = isinstance(error, CapacityUnavailable)
        failure = plan_launch_failure(
            snapshot,
            action.claim or "",
            action.offering,
            capacity=capacity,
            message=error.message,
            now=deps.clock.now(),
            unavailable_for=settings.offering_unavailable_for,
        )
        _record(outcome, failure, executor.apply(failure))
        again = again or capacity
    return again
