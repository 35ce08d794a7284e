"""measure_pool: the gap still open, the hourly cost, the budget share in use and the share of
reported capacity still available, from one snapshot (table tests)."""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.pool_gauges import measure_pool
from tests.unit.decisions.builders import claim, gpu_node, node, pool, snapshot


def with_budget(budget: dict[str, str] | None, **kwargs: Any) -> GPUPool:
    data = pool(**kwargs).model_dump(by_alias=True, mode="json")
    if budget is not None:
        data["spec"]["nodeManagerConfig"]["nodeProvisioner"]["budget"] = budget
    return GPUPool.model_validate(data)


def test_a_reporting_node_gives_the_available_share_and_closes_the_gap() -> None:
    # min 130 TFLOPs / 32Gi; one node reports 65 / 16Gi with 13 TFLOPs and 8Gi free
    the_snapshot = snapshot(
        with_budget({"budgetPerDay": "24"}),
        claims=[claim("c1")],
        nodes=[node("n1", claim_name="c1")],
        gpu_nodes=[gpu_node("n1", available=("13", "8Gi"))],
    )
    gauges = measure_pool(the_snapshot)
    assert (gauges.gap_tflops, gauges.gap_vram_bytes) == (65.0, float(16 * 2**30))
    assert (gauges.tflops_available_percent, gauges.vram_available_percent) == (20.0, 50.0)
    assert gauges.hourly_cost == 0.526 and gauges.budget_use_percent == 52.6  # of $1/h


@pytest.mark.parametrize(
    ("budget", "use"),
    [(None, None), ({"budgetPerDay": "lots"}, None), ({"budgetPerDay": "0"}, None), ({}, 39.134)],
)
def test_budget_use_only_where_a_ratio_exists(budget: dict[str, str] | None, use: float | None) -> None:
    # {} reads as TensorFusion's defaults: $1000 / 744 h is the tightest; 0.526 × 74.4 = 39.1344
    gauges = measure_pool(snapshot(with_budget(budget), claims=[claim("c1")]))
    assert gauges.budget_use_percent == use


def test_failed_claims_cost_nothing_and_in_flight_ones_close_the_gap() -> None:
    claims = [claim("c1", phase="Failed"), claim("c2", phase="Pending"), claim("c3")]
    gauges = measure_pool(snapshot(with_budget(None), claims=claims))
    assert gauges.hourly_cost == 1.052 and gauges.gap_tflops == 0.0
    assert gauges.tflops_available_percent is None
