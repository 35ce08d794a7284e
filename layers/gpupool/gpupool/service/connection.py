"""The connection check: run each vendor's check and keep CloudVendorConnectionReady true.

Role: `refresh_connection_status(deps, executor, outcome)` (the launch function calls it on
the schedule tick): per TensorFusionCluster, run the checks its vendor calls for — a cloud
(`gpupool.core.model.cloud.CLOUDS`): the cloud provider's `check_connection`, named by the
call it makes (`CloudProvider.connection_call`);
`karpenter`, or any Karpenter-mode pool of the cluster: list NodeClaims and read every
referenced node class — and apply `plan_connection_status` (its applier: `appliers_cluster`).

Must not: decide the condition (the core does), let a failing check stop the launch, or name
a cloud's API (the provider names its own call).
"""

from __future__ import annotations

from gpupool.core.decisions.connection import ConnectionCheck, plan_connection_status
from gpupool.core.model.cloud import CLOUDS
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.constants import LABEL_CLUSTER
from gpupool.core.model.karpenter import NodeClassReference
from gpupool.core.model.pool import GPUPool
from gpupool.service.deps import Deps
from gpupool.service.errors import DomainError
from gpupool.service.executor import Executor
from gpupool.service.outcome import Outcome
from gpupool.service.results import record_results

__all__ = ["cluster_checks", "refresh_connection_status"]


def _karpenter_refs(pools: list[GPUPool]) -> list[NodeClassReference]:
    refs: dict[tuple[str, str, str], NodeClassReference] = {}
    for pool in pools:
        config = pool.spec.node_manager_config
        ref = config.node_provisioner.karpenter_node_class_ref if config.node_provisioner else None
        if config.provisioning_mode == "Karpenter" and ref is not None:
            refs[(ref.group, ref.kind, ref.name)] = ref.reference()
    return [refs[key] for key in sorted(refs)]


def _karpenter_checks(deps: Deps, refs: list[NodeClassReference]) -> list[ConnectionCheck]:
    if deps.karpenter is None:
        return [
            ConnectionCheck(target="karpenter NodeClaims", error="no Kubernetes API for Karpenter is wired")
        ]
    try:
        deps.karpenter.check_access()
    except DomainError as error:
        return [ConnectionCheck(target="karpenter NodeClaims", error=error.message)]
    checks = [ConnectionCheck(target="karpenter NodeClaims")]
    for ref in refs:
        target = f"karpenter {ref.kind} {ref.name}"
        try:
            found = deps.karpenter.node_class_exists(ref)
        except DomainError as error:
            checks.append(ConnectionCheck(target=target, error=error.message))
            continue
        checks.append(
            ConnectionCheck(
                target=target, error=None if found else f"{ref.kind} {ref.name} ({ref.group}) not found"
            )
        )
    return checks


def cluster_checks(deps: Deps, cluster: TensorFusionCluster, pools: list[GPUPool]) -> list[ConnectionCheck]:
    """Run the checks `cluster` calls for (see module docstring); never raises a domain error."""
    vendor = cluster.spec.computing_vendor
    kind = vendor.type if vendor is not None and vendor.enable else None
    checks: list[ConnectionCheck] = []
    if kind in CLOUDS:
        target = f"{kind} {deps.compute.connection_call}"
        try:
            deps.compute.check_connection()
            checks.append(ConnectionCheck(target=target))
        except DomainError as error:
            checks.append(ConnectionCheck(target=target, error=error.message))
    refs = _karpenter_refs([p for p in pools if p.metadata.labels.get(LABEL_CLUSTER) == cluster.name])
    if kind == "karpenter" or refs:
        checks.extend(_karpenter_checks(deps, refs))
    return checks


def refresh_connection_status(deps: Deps, executor: Executor, outcome: Outcome) -> None:
    """Check every cluster's connection and write its condition where it changed."""
    try:
        clusters, pools = deps.cluster.list_clusters(), deps.cluster.list_pools()
    except DomainError as error:
        outcome.note(f"connection check skipped: {error.message}")
        return
    for cluster in clusters:
        plan = plan_connection_status(cluster, cluster_checks(deps, cluster, pools), now=deps.clock.now())
        record_results(outcome, plan, executor.apply(plan))
