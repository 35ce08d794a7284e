"""The capacity metrics one invocation's outcome yields, for the handlers to emit (EMF).

Role: `outcome_metrics(outcome)` → counts by metric name, every name present (0 included, so
an alarm on a missing series never fires for a quiet pool): instances launched and terminated
(applied; Karpenter NodeClaims created and deleted count as instances), launches that failed,
claims that failed, the Warning Events decided for a refused or passed budget and for
maxResources reached, and the claims ended for a budget. `pool_metrics(outcome)` → per pool
the launch function measured (`Outcome.gauges`): the open capacity gap, the hourly cost, the
share of the budget in use and of the reported TFLOPS / VRAM still available — each with its
EMF unit; a gauge without meaning (no budget, nothing reported) is left out, never sent as 0.

Must not: emit anything (the handlers own Powertools) or decide anything.
"""

from __future__ import annotations

from collections import Counter
from typing import Final, NamedTuple

from gpupool.core.model.constants import EVENT_BUDGET_EXCEEDED, EVENT_MAX_RESOURCE_CONSTRAINT_REACHED
from gpupool.core.planning.plan import DeleteClaim, RecordEvent, SetClaimPhase
from gpupool.service.outcome import Outcome

__all__ = ["METRIC_NAMES", "POOL_METRIC_NAMES", "PoolMetric", "outcome_metrics", "pool_metrics"]

METRIC_NAMES: Final = (
    "InstancesLaunched",
    "InstancesTerminated",
    "LaunchFailures",
    "ClaimsFailed",
    "BudgetRefusals",
    "BudgetTerminations",
    "MaxResourceReached",
)

# Per-pool gauges (dimensions `function`, `pool`) and their EMF units.
POOL_METRIC_NAMES: Final = {
    "CapacityGapTFlops": "None",
    "CapacityGapVRAM": "Bytes",
    "HourlyCost": "None",  # US dollars per hour: EMF has no currency unit
    "BudgetUse": "Percent",
    "TFlopsAvailable": "Percent",
    "VRAMAvailable": "Percent",
}

_LAUNCHES = ("launch-instance", "create-nodeclaim")  # a claim's node in either mode; an expansion
_TERMINATIONS = ("terminate-instance",)  # Karpenter-mode NodeClaims end through the same action


class PoolMetric(NamedTuple):
    name: str
    unit: str
    value: float


def outcome_metrics(outcome: Outcome) -> dict[str, int]:
    """Counts for METRIC_NAMES from what the invocation decided and applied."""
    applied = Counter(row.get("action") for row in outcome.applied if row.get("result") == "applied")
    failed_rows = Counter(row.get("action") for row in outcome.applied if row.get("result") == "failed")
    events = Counter(a.reason for a in outcome.plan.actions if isinstance(a, RecordEvent))
    actions = outcome.plan.actions
    return {
        "InstancesLaunched": sum(applied[kind] for kind in _LAUNCHES),
        "InstancesTerminated": sum(applied[kind] for kind in _TERMINATIONS),
        "LaunchFailures": sum(failed_rows[kind] for kind in _LAUNCHES),
        "ClaimsFailed": sum(1 for a in actions if isinstance(a, SetClaimPhase) and a.phase == "Failed"),
        "BudgetRefusals": events[EVENT_BUDGET_EXCEEDED],
        "BudgetTerminations": sum(
            1 for a in actions if isinstance(a, DeleteClaim) and a.reason == EVENT_BUDGET_EXCEEDED
        ),
        "MaxResourceReached": events[EVENT_MAX_RESOURCE_CONSTRAINT_REACHED],
    }


def pool_metrics(outcome: Outcome) -> dict[str, list[PoolMetric]]:
    """Per pool, the gauges of POOL_METRIC_NAMES that have a value (the last measure wins)."""
    result: dict[str, list[PoolMetric]] = {}
    for gauges in outcome.gauges:
        values = {
            "CapacityGapTFlops": gauges.gap_tflops,
            "CapacityGapVRAM": gauges.gap_vram_bytes,
            "HourlyCost": gauges.hourly_cost,
            "BudgetUse": gauges.budget_use_percent,
            "TFlopsAvailable": gauges.tflops_available_percent,
            "VRAMAvailable": gauges.vram_available_percent,
        }
        result[gauges.pool] = [
            PoolMetric(name, POOL_METRIC_NAMES[name], value)
            for name, value in values.items()
            if value is not None
        ]
    return result
