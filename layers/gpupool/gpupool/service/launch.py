"""The launch entry point: close every (or one) pool's capacity gap, claim first, instance second.

Role: `handle_launch(cause, deps, *, dry_run=False) -> Outcome` for Reconcile causes. Keeps
GPUPools in sync with TensorFusionCluster.spec.gpuPools, takes the Lease of every pool it
reconciles (`pool_lease`: two invocations never fill one gap twice, and a compaction never runs
in between — the loser reports that the pool is busy; the next trigger re-decides) before it
reads what the decisions need, then per pool in rounds: snapshot → plan_launch → apply (each
claim's node through the Compute of its mode: the cloud's, or Karpenter's NodeClaims); launch
failures become plan_launch_failure plans (capacity errors mark the offering unavailable in the
pool, so the next round picks the next cheapest). Ends with the pool status. The invocation
reads the cluster once (`invocation_cluster`): claims, node summaries, GPUNodes and node classes — no
pods — and every round and the closing status decide from that read with this invocation's
writes folded in.
An `InstanceInterruption` (Spot warning, ECS preemption, rebalance recommendation) is handled as
Karpenter does (`decisions.interruption`): the claim behind the instance (`service.interruption`)
is marked, its offering marked unavailable and its node cordoned (a Karpenter-mode claim's
NodeClaim deleted), then the pool's launch rounds run at once — waiting up to
`settings.interruption_lease_wait` for the pool's Lease — so the replacement is launched within
seconds on the next cheapest available offering, and only then is the old node drained. An
AutoSelect expansion's instance is left to Karpenter's own interruption handling.

Must not: decide itself (decisions are pure core functions) or keep state between invocations.
"""

from __future__ import annotations

from datetime import timedelta

from gpupool.core.decisions.interruption import plan_interruption
from gpupool.core.decisions.launch import launch_template, plan_launch
from gpupool.core.decisions.launch_failure import plan_launch_failure
from gpupool.core.decisions.pool_status import plan_pool_status
from gpupool.core.intake.causes import InstanceInterruption
from gpupool.core.intake.routing import LaunchCause
from gpupool.core.model.claim_state import launched_mode
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import ApplyPool, LaunchInstance, OfferingRef, Plan
from gpupool.core.planning.pool_gauges import measure_pool
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.service.connection import refresh_connection_status
from gpupool.service.deps import Deps
from gpupool.service.errors import CapacityUnavailable, DomainError, NotFound, PermanentError
from gpupool.service.executor import ActionResult, Executor
from gpupool.service.interruption import find_interrupted
from gpupool.service.invocation_cluster import InvocationCluster, reading_once
from gpupool.service.live_offerings import offerings_for_invocation
from gpupool.service.outcome import Outcome, acknowledge
from gpupool.service.pool_lease import PoolLease
from gpupool.service.pools import ClusterReads, select_pools, snapshot_of, sync_cluster_pools
from gpupool.service.results import record_results

__all__ = ["handle_launch"]

_LEASE_POLL = timedelta(seconds=1)


def _handled(result: ActionResult) -> bool:
    """Launch failures the next decision handles (claim Failed, offering marked) are not errors."""
    return isinstance(result.action, LaunchInstance) and isinstance(
        result.error, CapacityUnavailable | PermanentError
    )


def _record(outcome: Outcome, plan: Plan, results: list[ActionResult]) -> None:
    record_results(outcome, plan, results, handled=_handled)


def handle_launch(cause: object, deps: Deps, *, dry_run: bool = False) -> Outcome:
    """Reconcile one pool (`cause.pool`) or all; other causes are acknowledged with a reason."""
    if not isinstance(cause, LaunchCause):
        return acknowledge(cause, function="launch")
    deps = offerings_for_invocation(reading_once(deps))  # prices read once, on first use
    outcome = Outcome()
    executor = Executor(deps, event_id=cause.event_id, dry_run=dry_run)
    if isinstance(cause, InstanceInterruption):
        try:
            _interruption(cause, deps, executor, outcome, dry_run=dry_run)
        except DomainError as error:
            outcome.fail(f"{type(error).__name__}: {error.message}", retryable=error.retryable)
        return outcome
    try:
        sync_plan, sync_results = sync_cluster_pools(deps, executor)
        _record(outcome, sync_plan, sync_results)
        if cause.trigger.startswith("schedule") and cause.pool is None:  # ticks refresh the connection check
            refresh_connection_status(deps, executor, outcome)
        pools = select_pools(deps.cluster, cause.pool)
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
    leases = _hold_leases(pools, deps, outcome, dry_run=dry_run)
    try:
        for pool in pools:
            lease = leases.get(pool.name)
            if lease is None:
                continue
            try:
                _launch_pool(pool.name, deps, executor, outcome, lease, preview=preview.get(pool.name))
            except DomainError as error:
                outcome.fail(
                    f"pool {pool.name}: {type(error).__name__}: {error.message}", retryable=error.retryable
                )
    finally:
        for lease in leases.values():
            lease.release()
    return outcome


def _busy(pool: str) -> str:
    return f"pool {pool}: another invocation holds the pool's lease; the next trigger re-decides"


def _hold_leases(
    pools: list[GPUPool], deps: Deps, outcome: Outcome, *, dry_run: bool
) -> dict[str, PoolLease]:
    """The Lease of each pool this invocation may reconcile, taken before anything is read for
    them (so no other invocation's writes to those pools land between the read and the decision)."""
    held: dict[str, PoolLease] = {}
    for pool in pools:
        lease = PoolLease(deps, pool.name, dry_run=dry_run)
        try:
            taken = lease.hold()
        except DomainError as error:
            outcome.fail(
                f"pool {pool.name}: {type(error).__name__}: {error.message}", retryable=error.retryable
            )
            continue
        if taken:
            held[pool.name] = lease
        else:
            outcome.note(_busy(pool.name))
    return held


def _interruption(
    cause: InstanceInterruption, deps: Deps, executor: Executor, outcome: Outcome, *, dry_run: bool
) -> None:
    """Mark and cordon now, launch the replacement at once, then drain (module docstring)."""
    found = find_interrupted(deps, cause.instance_id)
    if found.note is not None:
        outcome.note(found.note)
        return
    plan = plan_interruption(
        found.claim,
        found.node,
        instance_id=cause.instance_id,
        reason=cause.reason,
        now=deps.clock.now(),
        pool=found.pool,
        unavailable_for=deps.settings.offering_unavailable_for,
    )
    _record(outcome, plan.now, executor.apply(plan.now))
    replaced = any(a.kind == "mark-claim-interrupted" for a in plan.now.actions)
    if replaced and found.pool is not None:
        _replace_interrupted(found.pool.name, deps, executor, outcome, dry_run=dry_run)
    _record(outcome, plan.drain, executor.apply(plan.drain))


def _replace_interrupted(
    name: str, deps: Deps, executor: Executor, outcome: Outcome, *, dry_run: bool
) -> None:
    """The pool's launch rounds right away, waiting up to `settings.interruption_lease_wait` for
    its Lease; what was read before the Lease was taken is read again under it."""
    lease = PoolLease(deps, name, dry_run=dry_run)
    waited = timedelta(0)
    while not lease.hold():
        if waited >= deps.settings.interruption_lease_wait:
            outcome.note(_busy(name))
            return
        deps.sleep(_LEASE_POLL.total_seconds())
        waited += _LEASE_POLL
    try:
        if isinstance(deps.cluster, InvocationCluster):
            deps.cluster.refresh()
        _launch_pool(name, deps, executor, outcome, lease)
    finally:
        lease.release()


def _pools_after(sync_plan: Plan) -> dict[str, GPUPool]:
    """The GPUPools a cluster-sync plan creates or updates, as they would be once applied."""
    return {a.pool: a.desired for a in sync_plan.actions if isinstance(a, ApplyPool)}


def _launch_pool(
    name: str,
    deps: Deps,
    executor: Executor,
    outcome: Outcome,
    lease: PoolLease,
    *,
    preview: GPUPool | None = None,
) -> None:
    cluster, settings = deps.cluster, deps.settings
    for _ in range(settings.max_launch_rounds):
        if not _launch_round(name, deps, executor, outcome, preview=preview) or executor.dry_run:
            break
        if not lease.hold():  # renew before the next round; lost it → someone else continues
            outcome.note(f"pool {name}: the pool's lease was lost; another invocation continues")
            return
    try:
        reads = ClusterReads.load(deps, node_classes=True)
        snapshot = snapshot_of(deps, preview or cluster.get_pool(name), reads)
    except NotFound:
        return
    status = plan_pool_status(snapshot, now=deps.clock.now())
    _record(outcome, status, executor.apply(status))
    outcome.gauges.append(measure_pool(snapshot))  # gap, cost, budget use: the handler emits them


def _launchable(deps: Deps, snapshot: PoolSnapshot) -> list[OfferingRef]:
    """The offerings in zones the pool's Compute can place its nodes in: a zone without one of
    its node class's subnets would only fail the launch (and a claim) before the next zone is
    tried. (Karpenter's node class picks its subnet itself: any zone. A mode this deployment has
    no Compute for launches nowhere: its launch says why.)"""
    mode, template = launched_mode(snapshot.pool), launch_template(snapshot)
    compute = deps.computes().get(mode) if mode else None
    zones = compute.launchable_zones(template) if compute and template is not None else None
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
        # Imported here: a cold start of the other modes need not import AutoSelect's planner.
        from gpupool.service.autoselect import expand_autoselect

        expand_autoselect(pool, deps, executor, outcome)
        return False
    snapshot = snapshot_of(deps, pool, ClusterReads.load(deps, node_classes=True))
    suffixes = [deps.new_suffix() for _ in range(settings.max_nodes_per_plan)]
    plan = plan_launch(
        snapshot,
        _launchable(deps, snapshot),
        now=deps.clock.now(),
        suffixes=suffixes,
        max_nodes=settings.max_nodes_per_plan,
        unavailable_for=settings.offering_unavailable_for,
    )
    results = executor.apply(plan)
    _record(outcome, plan, results)
    again = False
    for result in results:
        action, error = result.action, result.error
        if not isinstance(action, LaunchInstance) or not isinstance(
            error, CapacityUnavailable | PermanentError
        ):
            continue
        capacity = isinstance(error, CapacityUnavailable)
        failure = plan_launch_failure(
            snapshot,
            action.claim,
            action.offering,
            capacity=capacity,
            message=error.message,
            now=deps.clock.now(),
            unavailable_for=settings.offering_unavailable_for,
        )
        _record(outcome, failure, executor.apply(failure))
        again = again or capacity
    return again
