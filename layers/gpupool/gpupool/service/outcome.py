"""What an invocation did: the plan it made, what it applied, and what went wrong.

Role: `Outcome`, returned by every entry point and printed by `gpupool invoke --json` as
`{"plan": {"actions": [...], "reasons": [...]}, "applied": [...], "errors": [...]}`.
`retryable` tells the handler to raise (so the platform retries) instead of acknowledging.

Must not: apply anything or format for a particular platform.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpupool.core.intake.causes import Ignored
from gpupool.core.planning.plan import Plan
from gpupool.core.planning.pool_gauges import PoolGauges

__all__ = ["Outcome", "acknowledge"]


@dataclass
class Outcome:
    plan: Plan = field(default_factory=Plan)
    applied: list[dict[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    retryable: bool = False
    # Where each pool stands once the invocation is done (metrics only; not in `to_json`).
    gauges: list[PoolGauges] = field(default_factory=list)

    def extend(self, other: Outcome) -> None:
        self.plan = self.plan + other.plan
        self.applied.extend(other.applied)
        self.errors.extend(other.errors)
        self.gauges.extend(other.gauges)
        self.retryable = self.retryable or other.retryable

    def fail(self, message: str, *, retryable: bool) -> None:
        """Record an error; one retryable error makes the whole invocation retryable."""
        self.errors.append(message)
        self.retryable = self.retryable or retryable

    def note(self, reason: str) -> None:
        """Add a reason that is not part of any decision's plan (e.g. a pool skipped)."""
        self.plan = self.plan + Plan(reasons=(reason,))

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": {
                "actions": [a.model_dump(mode="json", exclude_none=True) for a in self.plan.actions],
                "reasons": list(self.plan.reasons),
            },
            "applied": list(self.applied),
            "errors": list(self.errors),
        }


def acknowledge(cause: object, *, function: str) -> Outcome:
    """The Outcome acknowledging a cause `function` does not act on — ignored at intake, or
    another function's — with the reason, and nothing done."""
    outcome = Outcome()
    if isinstance(cause, Ignored):
        outcome.note(f"ignored: {cause.reason}")
    else:
        outcome.note(f"{function} does not act on {getattr(cause, 'kind', type(cause).__name__)}")
    return outcome
