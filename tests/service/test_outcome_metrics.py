"""The capacity metrics an outcome yields, and the handler emitting them as EMF next to the
decision latency (every name present, zeros included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.planning.plan import Plan, RecordEvent, SetClaimPhase
from gpupool.handlers import aws_lambda
from gpupool.service.outcome import Outcome
from gpupool.service.outcome_metrics import METRIC_NAMES, outcome_metrics

EVENTS = Path(__file__).resolve().parents[2] / "events" / "aws"


def _event(reason: str) -> RecordEvent:
    return RecordEvent(
        pool="p", object_kind="GPUPool", object_name="p", event_type="Warning", reason=reason, message="m"
    )


def busy_outcome() -> Outcome:
    plan = Plan(
        actions=(
            _event("BudgetExceeded"),
            _event("MaxResourceConstraintReached"),
            _event("BudgetExceeded"),
            SetClaimPhase(pool="p", claim="c1", phase="Failed", reason="InsufficientCapacity", message="x"),
            SetClaimPhase(pool="p", claim="c2", phase="Creating", reason="Launched", message="y"),
        )
    )
    applied = [
        {"action": "launch-instance", "result": "applied"},
        {"action": "launch-instance", "result": "applied"},
        {"action": "launch-instance", "result": "failed"},
        {"action": "terminate-instance", "result": "applied"},
        {"action": "terminate-instance", "result": "dry-run"},
    ]
    return Outcome(plan=plan, applied=applied)


def test_counts_from_what_was_decided_and_applied() -> None:
    assert outcome_metrics(busy_outcome()) == {
        "InstancesLaunched": 2,
        "InstancesTerminated": 1,
        "ClaimsFailed": 1,
        "BudgetRefusals": 2,
        "MaxResourceReached": 1,
    }


def test_a_quiet_outcome_reports_every_name_as_zero() -> None:
    assert outcome_metrics(Outcome()) == dict.fromkeys(METRIC_NAMES, 0)


def test_the_handler_emits_them_as_emf(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = busy_outcome()

    def service(cause: Any, deps: Any, /, *, dry_run: bool = False) -> Outcome:
        return outcome

    handler = aws_lambda.make_handler("launch", lambda: object(), service=lambda: service)  # type: ignore[arg-type,return-value]
    handler(json.loads((EVENTS / "scheduled-event.json").read_text()), None)
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert blobs, "no EMF blob printed"
    emitted = blobs[-1]
    names = {m["Name"] for d in emitted["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert set(METRIC_NAMES) | {"DecisionLatency"} <= names
    values = {k: v if isinstance(v, list) else [v] for k, v in emitted.items() if k != "_aws"}
    assert values["InstancesLaunched"] == [2] and values["BudgetRefusals"] == [2]
    assert values["ClaimsFailed"] == [1] and values["InstancesTerminated"] == [1]
    assert len(values["DecisionLatency"]) == 1 and values["DecisionLatency"][0] >= 0
