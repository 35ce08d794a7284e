"""The one executor: applies a Plan's actions through the ports, in order, and logs them.

Role: dispatches each action to its `apply_*` function (`gpupool.service.dispatch`). When an
action fails with a domain error, later actions on the same claim (the claim it declares,
`Action.targets`) are skipped (so a claim is never released before its instance is
terminated). Logs the plan once and each action once as structured JSON with the keys pool,
claim, node, instance_id (the targets it declares), action, event_id.
Dry-run: log the plan, call no port — adapters never see dry-run.

Must not: decide (decisions are in `gpupool.core.decisions`) or import SDKs.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from gpupool.core.planning.plan import TARGET_KEYS, Action, Plan
from gpupool.service.appliers import Skip
from gpupool.service.deps import Deps
from gpupool.service.dispatch import apply_action
from gpupool.service.errors import DomainError

__all__ = ["LOG_KEYS", "ActionResult", "Executor"]

LOG = logging.getLogger("gpupool.service")
LOG_KEYS = (*TARGET_KEYS, "action", "event_id")


@dataclass(frozen=True)
class ActionResult:
    action: Action
    outcome: str  # "applied" | "skipped" | "failed" | "dry-run"
    detail: str = ""
    error: DomainError | None = None

    def record(self) -> dict[str, str]:
        row = self.action.log_keys()
        row["result"] = self.outcome
        if self.detail:
            row["detail"] = self.detail
        return row


class Executor:
    def __init__(self, deps: Deps, *, event_id: str | None, dry_run: bool = False) -> None:
        self.deps = deps
        self.event_id = event_id
        self.dry_run = dry_run

    # ---- logging -------------------------------------------------------------------------
    def _log(self, message: str, keys: dict[str, str], level: int = logging.INFO, **extra: object) -> None:
        entry: dict[str, object] = {key: keys.get(key) for key in LOG_KEYS}
        entry["event_id"] = self.event_id
        entry["message"] = message
        entry.update(extra)
        LOG.log(level, json.dumps(entry, default=str, sort_keys=True))

    # ---- applying ------------------------------------------------------------------------
    def apply(self, plan: Plan) -> list[ActionResult]:
        """Apply `plan` in order; returns one result per action."""
        if plan.actions or plan.reasons:
            pools = sorted({pool for a in plan.actions if (pool := a.targets().get("pool"))})
            self._log(
                "plan",
                {"pool": ",".join(pools)} if pools else {},
                actions=[a.model_dump(mode="json", exclude_none=True) for a in plan.actions],
                reasons=list(plan.reasons),
                dry_run=self.dry_run,
            )
        results: list[ActionResult] = []
        failed_claims: set[str] = set()
        for action in plan.actions:
            result = self._apply_one(action, failed_claims)
            claim = action.targets().get("claim")
            if result.outcome == "failed" and claim:
                failed_claims.add(claim)
            level = logging.WARNING if result.outcome == "failed" else logging.INFO
            self._log(result.outcome, action.log_keys(), level, detail=result.detail)
            results.append(result)
        return results

    def _apply_one(self, action: Action, failed_claims: set[str]) -> ActionResult:
        if self.dry_run:
            return ActionResult(action, "dry-run")
        if action.targets().get("claim") in failed_claims:
            return ActionResult(action, "skipped", "an earlier action on this claim failed")
        try:
            detail = apply_action(self.deps, action)
        except Skip as skip:
            return ActionResult(action, "skipped", str(skip))
        except DomainError as error:
            return ActionResult(action, "failed", f"{type(error).__name__}: {error.message}", error)
        return ActionResult(action, "applied", detail)
