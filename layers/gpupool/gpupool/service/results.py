"""Folding executor results into an Outcome (shared by the entry points).

Role: `record_results` appends the plan, one applied row per action, and an error line per
failed action the caller does not handle itself.

Must not: apply or decide anything.
"""

from __future__ import annotations

from collections.abc import Callable

from gpupool.core.planning.plan import Plan
from gpupool.service.executor import ActionResult
from gpupool.service.outcome import Outcome

__all__ = ["record_results"]


def record_results(
    outcome: Outcome,
    plan: Plan,
    results: list[ActionResult],
    *,
    handled: Callable[[ActionResult], bool] = lambda _: False,
) -> None:
    outcome.plan = outcome.plan + plan
    for result in results:
        outcome.applied.append(result.record())
        if result.outcome == "failed" and result.error is not None and not handled(result):
            targets = result.action.targets()
            target = targets.get("claim") or targets.get("node") or targets.get("pool", "")
            outcome.fail(
                f"{result.action.kind} {target}: {result.detail}".strip(), retryable=result.error.retryable
            )
