"""plan_connection_status: the TensorFusionCluster's CloudVendorConnectionReady condition.

Role: from the outcome of each connection check the service ran for one cluster (the cloud's
Compute check, and for vendor `karpenter` or any Karpenter-mode pool the Karpenter check),
decide the condition TensorFusion names: `CloudVendorConnectionReady` True with reason
`CloudVendorConnectionOK`, or False with reason `CloudVendorConnectionFailed` and every failed
check's message. The condition is written only when its status, reason or message changes
(its lastTransitionTime then is `now`), so a schedule tick that finds nothing new writes nothing.

Must not: run a check, perform I/O or read the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from gpupool.core.model.base import Condition
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.constants import (
    CONDITION_CLOUD_VENDOR_CONNECTION_READY,
    REASON_CLOUD_VENDOR_CONNECTION_FAILED,
    REASON_CLOUD_VENDOR_CONNECTION_OK,
)
from gpupool.core.planning.plan import Plan, SetClusterCondition

__all__ = ["ConnectionCheck", "connection_condition", "plan_connection_status"]


class ConnectionCheck(BaseModel):
    """One check's outcome: `target` (e.g. "aws DescribeInstances", "karpenter NodeClaims") and
    the error message when it failed (None: it succeeded)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    error: str | None = None


def connection_condition(checks: Sequence[ConnectionCheck], *, now: datetime) -> Condition:
    """The condition the checks amount to (no checks: Unknown, nothing was checked)."""
    if not checks:
        return Condition(
            type=CONDITION_CLOUD_VENDOR_CONNECTION_READY,
            status="Unknown",
            reason="NoCheck",
            message="no cloud vendor or Karpenter to check",
            last_transition_time=now,
        )
    failed = [c for c in checks if c.error is not None]
    if failed:
        message = "; ".join(f"{c.target}: {c.error}" for c in failed)
        return Condition(
            type=CONDITION_CLOUD_VENDOR_CONNECTION_READY,
            status="False",
            reason=REASON_CLOUD_VENDOR_CONNECTION_FAILED,
            message=message,
            last_transition_time=now,
        )
    return Condition(
        type=CONDITION_CLOUD_VENDOR_CONNECTION_READY,
        status="True",
        reason=REASON_CLOUD_VENDOR_CONNECTION_OK,
        message="checked: " + ", ".join(c.target for c in checks),
        last_transition_time=now,
    )


def plan_connection_status(
    cluster: TensorFusionCluster, checks: Sequence[ConnectionCheck], *, now: datetime
) -> Plan:
    """Set the cluster's condition when it changed (see module docstring); nothing to check
    (no enabled vendor, no Karpenter pool) leaves the condition as it is."""
    if not checks:
        return Plan(reasons=(f"cluster {cluster.name}: no cloud vendor or Karpenter to check",))
    wanted = connection_condition(checks, now=now)
    current = next(
        (c for c in (cluster.status.conditions if cluster.status else []) if c.type == wanted.type),
        None,
    )
    unchanged = current is not None and (current.status, current.reason, current.message) == (
        wanted.status,
        wanted.reason,
        wanted.message,
    )
    summary = f"cluster {cluster.name}: {wanted.type}={wanted.status} ({wanted.reason})"
    if unchanged:
        return Plan(reasons=(f"{summary}, unchanged",))
    action = SetClusterCondition(cluster_name=cluster.name, condition=wanted)
    return Plan(actions=(action,), reasons=(f"{summary}: {wanted.message}",))
