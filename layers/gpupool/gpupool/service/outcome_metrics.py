"""The capacity metrics one invocation's outcome yields, for the handlers to emit (EMF).

Role: `outcome_metrics(outcome)` → counts by metric name, every name present (0 included, so
an alarm on a missing series never fires for a quiet pool): instances launched and terminated
(applied), claims that failed, and the Warning Events decided for a refused budget and for
maxResources reached.

Must not: emit anything (the handlers own Powertools) or decide anything.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from gpupool.core.model.constants import EVENT_MAX_RESOURCE_CONSTRAINT_REACHED
from gpupool.core.planning.budget import EVENT_BUDGET_EXCEEDED
from gpupool.core.planning.plan import RecordEvent, SetClaimPhase
from gpupool.service.outcome import Outcome

__all__ = ["METRIC_NAMES", "outcome_metrics"]

METRIC_NAMES: Final = (
    "InstancesLaunched",
    "InstancesTerminated",
    "ClaimsFailed",
    "BudgetRefusals",
    "MaxResourceReached",
)


def outcome_metrics(outcome: Outcome) -> dict[str, int]:
    """Counts for METRIC_NAMES from what the invocation decided and applied."""
    applied = Counter(row.get("action") for row in outcome.applied if row.get("result") == "applied")
    events = Counter(a.reason for a in outcome.plan.actions if isinstance(a, RecordEvent))
    failed = sum(1 for a in outcome.plan.actions if isinstance(a, SetClaimPhase) and a.phase == "Failed")
    return {
        "InstancesLaunched": applied["launch-instance"],
        "InstancesTerminated": applied["terminate-instance"],
        "ClaimsFailed": failed,
        "BudgetRefusals": events[EVENT_BUDGET_EXCEEDED],
        "MaxResourceReached": events[EVENT_MAX_RESOURCE_CONSTRAINT_REACHED],
    }
