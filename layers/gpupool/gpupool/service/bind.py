"""The bind entry point: keep every claim's lifecycle true, handle interruptions, sweep orphans.

Role: `handle_bind(cause, deps, *, dry_run=False) -> Outcome`. For an interruption warning or
an instance that stops / terminates under a live claim: plan_interruption (cordon, drain,
mark the claim). For every cause: plan_claim_lifecycle over all claims (bind ready nodes,
adopt instances found by tag, launch / registration timeouts, deleting claims terminate
their instance then release the finalizer). For the periodic Sweep: plan_orphan_sweep and
plan_orphan_nodes too. Then the status of every pool whose claims changed is brought up to date.

Must not: launch instances (launch does, under the pool lease) or decide itself.
"""

from __future__ import annotations

from gpupool.core.decisions.claim_lifecycle import LifecyclePolicy, plan_claim_lifecycle
from gpupool.core.decisions.interruption import plan_interruption
from gpupool.core.decisions.orphan_sweep import plan_orphan_nodes, plan_orphan_sweep
from gpupool.core.decisions.pool_status import plan_pool_status
from gpupool.core.intake.causes import InstanceInterruption, InstanceStateChanged, Sweep
from gpupool.core.intake.routing import BindCause
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.snapshot import ManagedInstance, node_claim
from gpupool.service.deps import Deps
from gpupool.service.errors import DomainError
from gpupool.service.executor import Executor
from gpupool.service.outcome import Outcome, acknowledge
from gpupool.service.pools import ClusterReads, select_pools, snapshot_of
from gpupool.service.results import record_results

__all__ = ["handle_bind"]

_LOST_STATES = ("stopping", "stopped", "shutting-down", "terminated")


def handle_bind(cause: object, deps: Deps, *, dry_run: bool = False) -> Outcome:
    if not isinstance(cause, BindCause):
        return acknowledge(cause, function="bind")
    outcome = Outcome()
    executor = Executor(deps, event_id=cause.event_id, dry_run=dry_run)
    try:
        _bind(cause, deps, executor, outcome)
    except DomainError as error:
        outcome.fail(f"{type(error).__name__}: {error.message}", retryable=error.retryable)
    return outcome


def _claim_of_instance(instance_id: str, claims: list[GPUNodeClaim], deps: Deps) -> GPUNodeClaim | None:
    for claim in claims:
        if claim.status and claim.status.instance_id == instance_id:
            return claim
    described = deps.compute.describe([instance_id])
    names = {i.claim_name for i in described if i.claim_name}
    return next((c for c in claims if c.name in names), None)


def _bind(
    cause: BindCause,
    deps: Deps,
    executor: Executor,
    outcome: Outcome,
) -> None:
    cluster, compute, settings = deps.cluster, deps.compute, deps.settings
    claims = cluster.list_claims()
    nodes = cluster.list_nodes()
    interrupted: str | None = None
    if isinstance(cause, InstanceInterruption):
        interrupted = cause.reason
    elif isinstance(cause, InstanceStateChanged) and cause.state in _LOST_STATES:
        interrupted = f"instance-{cause.state}"
    if interrupted is not None and isinstance(cause, InstanceInterruption | InstanceStateChanged):
        claim = _claim_of_instance(cause.instance_id, claims, deps)
        node = next((n for n in nodes if claim is not None and node_claim(n) == claim.name), None)
        plan = plan_interruption(
            claim, node, instance_id=cause.instance_id, reason=interrupted, now=deps.clock.now()
        )
        record_results(outcome, plan, executor.apply(plan))
        claims = cluster.list_claims()
    live = compute.list_managed()
    known = {i.instance_id for i in live}
    missing = [
        c.status.instance_id
        for c in claims
        if c.status and c.status.instance_id and c.status.instance_id not in known
    ]
    described: list[ManagedInstance] = compute.describe(missing) if missing else []
    policy = LifecyclePolicy(
        launch_timeout=settings.launch_timeout,
        registration_timeout=settings.registration_timeout,
        failed_claim_retention=settings.failed_claim_retention,
    )
    lifecycle = plan_claim_lifecycle(
        claims,
        nodes,
        [*live, *described],
        gpu_nodes=cluster.list_gpu_nodes(),
        now=deps.clock.now(),
        policy=policy,
    )
    record_results(outcome, lifecycle, executor.apply(lifecycle))
    if isinstance(cause, Sweep):
        sweep = plan_orphan_sweep(
            live,
            {c.name for c in claims},
            cluster=settings.cluster_name,
            now=deps.clock.now(),
            grace=settings.orphan_grace,
        )
        record_results(outcome, sweep, executor.apply(sweep))
        orphans = plan_orphan_nodes(nodes, {c.name for c in cluster.list_claims()})
        record_results(outcome, orphans, executor.apply(orphans))
    touched = {a.pool for a in outcome.plan.actions if a.pool}
    _refresh_pool_status(deps, executor, outcome, touched)


def _refresh_pool_status(deps: Deps, executor: Executor, outcome: Outcome, pools: set[str]) -> None:
    """Keep the status of the pools whose claims changed true (bound, failed, interrupted)."""
    if not pools or executor.dry_run:
        return
    reads = ClusterReads.load(deps)
    for pool in select_pools(deps, None):
        if pool.name in pools:
            status = plan_pool_status(snapshot_of(deps, pool, reads), now=deps.clock.now())
            record_results(outcome, status, executor.apply(status))
