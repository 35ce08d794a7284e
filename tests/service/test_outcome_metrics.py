"""The capacity metrics an outcome yields, and the handler emitting them as EMF next to the
decision latency (every name present, zeros included); the per-pool gauges (gap, hourly cost,
budget use, available share) measured by the launch function, emitted one blob per pool with the
`function` and `pool` dimensions and their units."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.intake.causes import Reconcile
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import DeleteClaim, Plan, RecordEvent, SetClaimPhase
from gpupool.core.planning.pool_gauges import PoolGauges
from gpupool.handlers import aws_lambda
from gpupool.service.launch import handle_launch
from gpupool.service.outcome import Outcome
from gpupool.service.outcome_metrics import METRIC_NAMES, POOL_METRIC_NAMES, outcome_metrics, pool_metrics
from tests.service.fakes import World, make_pool

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
            DeleteClaim(pool="p", claim="c3", reason="BudgetExceeded"),
            DeleteClaim(pool="p", claim="c4", reason="Compaction"),
        )
    )
    applied = [
        {"action": "launch-instance", "result": "applied"},
        {"action": "launch-instance", "result": "applied"},
        {"action": "launch-instance", "result": "failed"},
        {"action": "terminate-instance", "result": "applied"},
        {"action": "terminate-instance", "result": "dry-run"},
        {"action": "launch-instance", "result": "applied"},  # a Karpenter-mode claim's NodeClaim
        {"action": "create-nodeclaim", "result": "failed"},
        {"action": "terminate-instance", "result": "applied"},  # a Karpenter-mode claim's NodeClaim deleted
    ]
    gauges = [
        PoolGauges("p", 65.0, 17179869184.0, 1.052, 84.16, 12.5, None),
        PoolGauges("q", 0.0, 0.0, 0.0, None, None, None),
    ]
    return Outcome(plan=plan, applied=applied, gauges=gauges)


def test_counts_from_what_was_decided_and_applied() -> None:
    assert outcome_metrics(busy_outcome()) == {
        "InstancesLaunched": 3,  # two instances and one Karpenter-mode NodeClaim
        "InstancesTerminated": 2,  # an instance and a NodeClaim, one action kind (the dry run does not count)
        "LaunchFailures": 2,
        "ClaimsFailed": 1,
        "BudgetRefusals": 2,
        "BudgetTerminations": 1,
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
    assert values["InstancesLaunched"] == [3] and values["BudgetRefusals"] == [2]
    assert values["ClaimsFailed"] == [1] and values["InstancesTerminated"] == [2]
    assert len(values["DecisionLatency"]) == 1 and values["DecisionLatency"][0] >= 0
    units = {m["Name"]: m["Unit"] for d in emitted["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert units["DecisionLatency"] == "Milliseconds" and units["InstancesLaunched"] == "Count"
    assert emitted["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["function"]]
    assert "pool" not in emitted and not set(POOL_METRIC_NAMES) & names
    pools = {b["pool"]: b for b in blobs if "pool" in b}
    assert set(pools) == {"p", "q"}
    for blob in pools.values():
        assert blob["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["function", "pool"]]
        assert blob["function"] == "launch" and blob["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "gpupool"
    p_units = {m["Name"]: m["Unit"] for m in pools["p"]["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert p_units == {
        "CapacityGapTFlops": "None",
        "CapacityGapVRAM": "Bytes",
        "HourlyCost": "None",
        "BudgetUse": "Percent",
        "TFlopsAvailable": "Percent",
    }
    assert pools["p"]["BudgetUse"] == [84.16] and pools["p"]["CapacityGapVRAM"] == [17179869184.0]
    # a pool without a budget or reported capacity sends no BudgetUse / available share at all
    assert "BudgetUse" not in pools["q"] and "TFlopsAvailable" not in pools["q"]
    assert pools["q"]["HourlyCost"] == [0.0]


def test_pool_metrics_leave_out_what_has_no_value() -> None:
    metrics = pool_metrics(busy_outcome())
    assert [m.name for m in metrics["q"]] == ["CapacityGapTFlops", "CapacityGapVRAM", "HourlyCost"]
    assert {m.name: m.value for m in metrics["p"]}["HourlyCost"] == 1.052


def test_the_launch_function_measures_every_pool_it_handled() -> None:
    # min 4 × 65 TFLOPs, budget $30/day ($1.25/h): two g4dn.xlarge (1.052) launch, 130 TFLOPs stay open
    data = make_pool(min_tflops="260", min_vram="64Gi").model_dump(by_alias=True, mode="json")
    data["spec"]["nodeManagerConfig"]["nodeProvisioner"]["budget"] = {"budgetPerDay": "30"}
    world = World(GPUPool.model_validate(data), make_pool("pool-b", min_tflops=None, min_vram=None))
    outcome = handle_launch(Reconcile(pool=None, trigger="schedule", event_id="m1"), world.deps)
    gauges = {g.pool: g for g in outcome.gauges}
    assert set(gauges) == {"pool-a", "pool-b"}
    a = gauges["pool-a"]
    assert (a.gap_tflops, a.gap_vram_bytes) == (130.0, float(32 * 2**30))
    assert a.hourly_cost == 1.052 and a.budget_use_percent == round(100 * 1.052 / 1.25, 3)
    assert a.tflops_available_percent is None  # no node reported GPU capacity yet
    b = gauges["pool-b"]
    assert (b.gap_tflops, b.hourly_cost, b.budget_use_percent) == (0.0, 0.0, None)
