"""plan_connection_status: TensorFusion's condition and reasons from check outcomes, written on change."""

from __future__ import annotations

from datetime import UTC, datetime

from gpupool.core.decisions.connection import ConnectionCheck, plan_connection_status
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.planning.plan import SetClusterCondition

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def cluster(conditions: list[dict[str, str]] | None = None) -> TensorFusionCluster:
    raw = {"metadata": {"name": "demo"}, "status": {"conditions": conditions or []}}
    return TensorFusionCluster.model_validate(raw)


def only_condition(plan: object) -> SetClusterCondition:
    (action,) = plan.actions  # type: ignore[attr-defined]
    assert isinstance(action, SetClusterCondition)
    return action


def test_all_checks_pass_ready_ok() -> None:
    action = only_condition(
        plan_connection_status(cluster(), [ConnectionCheck(target="aws DescribeInstances")], now=NOW)
    )
    condition = action.condition
    assert (condition.type, condition.status, condition.reason) == (
        "CloudVendorConnectionReady",
        "True",
        "CloudVendorConnectionOK",
    )
    assert condition.last_transition_time == NOW and action.cluster_name == "demo"


def test_any_failed_check_fails_with_every_failed_message() -> None:
    checks = [
        ConnectionCheck(target="karpenter NodeClaims"),
        ConnectionCheck(target="karpenter EC2NodeClass a", error="not found"),
        ConnectionCheck(target="aws DescribeInstances", error="AuthFailure"),
    ]
    condition = only_condition(plan_connection_status(cluster(), checks, now=NOW)).condition
    assert (condition.status, condition.reason) == ("False", "CloudVendorConnectionFailed")
    assert condition.message == "karpenter EC2NodeClass a: not found; aws DescribeInstances: AuthFailure"


def test_nothing_to_check_writes_nothing() -> None:
    plan = plan_connection_status(cluster(), [], now=NOW)
    assert plan.actions == () and "no cloud vendor" in plan.reasons[0]


def test_an_unchanged_condition_is_not_written_again() -> None:
    current = {
        "type": "CloudVendorConnectionReady",
        "status": "True",
        "reason": "CloudVendorConnectionOK",
        "message": "checked: aws DescribeInstances",
    }
    plan = plan_connection_status(
        cluster([current]), [ConnectionCheck(target="aws DescribeInstances")], now=NOW
    )
    assert plan.actions == () and "unchanged" in plan.reasons[0]
