"""The bind entry point: keep every claim's lifecycle true, handle interruptions, sweep orphans.

Role: `handle_bind(cause, deps, *, dry_run=False) -> Outcome`. For an instance that stops /
terminates under a live claim: plan_interruption (mark the claim, cordon; a Karpenter-mode
claim's NodeClaim deleted; then drain) — interruption warnings go to the launch function, which
replaces the node at once. For every cause: plan_claim_lifecycle over all claims (bind ready nodes,
adopt instances found by tag, launch / registration timeouts, deleting claims terminate
their instance then release the finalizer). For the periodic Sweep: plan_orphan_sweep and
plan_orphan_nodes too. Then the status of every pool whose claims changed is brought up to date.
The invocation reads the cluster once (`invocation_cluster`): claims, node summaries and GPUNodes (and
the pools when a status is due); every decision reads that, with this invocation's writes folded in.

Must not: launch instances (launch does, under the pool lease) or decide itself.
"""

from __future__ import annotations

from gpupool.core.decisions.claim_lifecycle import LifecyclePolicy, plan_claim_lifecycle
from gpupool.core.decisions.instance_owner import claim_of_instance
from gpupool.core.decisions.interruption import plan_interruption
from gpupool.core.decisions.orphan_sweep import plan_orphan_nodes, plan_orphan_sweep
from gpupool.core.decisions.pool_status import plan_pool_status
from gpupool.core.intake.causes import InstanceStateChanged, Sweep
from gpupool.core.intake.routing import BindCause
from gpupool.core.model.claim_state import LaunchedMode, claim_mode, node_claim
from gpupool.core.model.instance import ManagedInstance
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.service.deps import Deps
from gpupool.service.errors import DomainError
from gpupool.service.executor import Executor
from gpupool.service.invocation_cluster import reading_once
from gpupool.service.outcome import Outcome, acknowledge
from gpupool.service.pools import ClusterReads, select_pools, snapshot_of
from gpupool.service.results import record_results

__all__ = ["handle_bind"]

_LOST_STATES = ("stopping", "stopped", "shutting-down", "terminated")


def handle_bind(cause: object, deps: Deps, *, dry_run: bool = False) -> Outcome:
    if not isinstance(cause, BindCause):
        return acknowledge(cause, function="bind")
    deps = reading_once(deps)
    outcome = Outcome()
    executor = Executor(deps, event_id=cause.event_id, dry_run=dry_run)
    try:
        _bind(cause, deps, executor, outcome)
    except DomainError as error:
        outcome.fail(f"{type(error).__name__}: {error.message}", retryable=error.retryable)
    return outcome


def _claim_of_instance(instance_id: str, claims: list[GPUNodeClaim], deps: Deps) -> GPUNodeClaim | None:
    """A claim trusts only its own instance (`decisions.instance_owner`); the cloud is asked only
    when no claim recorded the id (its events name cloud instances)."""
    if any(c.status and c.status.instance_id == instance_id for c in claims):
        return claim_of_instance(instance_id, claims, ())
    return claim_of_instance(instance_id, claims, deps.compute.describe([instance_id]))


def _describe_missing(deps: Deps, claims: list[GPUNodeClaim], known: set[str]) -> list[ManagedInstance]:
    """The recorded instances the lists did not report (terminated ones, gone NodeClaims), each
    asked of the Compute of its claim's mode."""
    missing: dict[LaunchedMode, list[str]] = {}
    for claim in claims:
        instance_id = claim.status.instance_id if claim.status else None
        if instance_id and instance_id not in known:
            missing.setdefault(claim_mode(claim), []).append(instance_id)
    return [i for mode, ids in missing.items() for i in deps.compute_for(mode).describe(ids)]


def _bind(
    cause: BindCause,
    deps: Deps,
    executor: Executor,
    outcome: Outcome,
) -> None:
    cluster, settings = deps.cluster, deps.settings
    reads = ClusterReads.load(deps)
    claims, nodes = list(reads.claims), list(reads.nodes)
    if isinstance(cause, InstanceStateChanged) and cause.state in _LOST_STATES:
        claim = _claim_of_instance(cause.instance_id, claims, deps)
        node = next((n for n in nodes if claim is not None and node_claim(n) == claim.name), None)
        interruption = plan_interruption(
            claim, node, instance_id=cause.instance_id, reason=f"instance-{cause.state}", now=deps.clock.now()
        )
        for plan in (interruption.now, interruption.drain):
            record_results(outcome, plan, executor.apply(plan))
        claims = cluster.list_claims()
    live = [i for compute in deps.computes().values() for i in compute.list_managed()]
    described = _describe_missing(deps, claims, {i.instance_id for i in live})
    policy = LifecyclePolicy(
        launch_timeout=settings.launch_timeout,
        registration_timeout=settings.registration_timeout,
        failed_claim_retention=settings.failed_claim_retention,
    )
    lifecycle = plan_claim_lifecycle(
        claims,
        nodes,
        [*live, *described],
        gpu_nodes=reads.gpu_nodes,
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
    touched = {pool for a in outcome.plan.actions if (pool := a.targets().get("pool"))}
    _refresh_pool_status(deps, executor, outcome, touched)


def _refresh_pool_status(deps: Deps, executor: Executor, outcome: Outcome, pools: set[str]) -> None:
    """Keep the status of the pools whose claims changed true (bound, failed, interrupted)."""
    if not pools or executor.dry_run:
        return
    reads = ClusterReads.load(deps)
    for pool in select_pools(deps.cluster, None):
        if pool.name in pools:
            status = plan_pool_status(snapshot_of(deps, pool, reads), now=deps.clock.now())
            record_results(outcome, status, executor.apply(status))
