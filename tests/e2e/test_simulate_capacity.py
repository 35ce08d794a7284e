"""`gpupool simulate capacity` end to end on a two-hour fixture trace: both policies, JSON, table
(with the cost ratio), plot, the budget held, gpupool in Karpenter mode, the shipped sample when
no trace is given, bad input refused with one clear line and nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpupool.cli.main import main

TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "capacity_two_hours.csv"
WINDOW = ["--trace", str(TRACE), "--days", "0.1"]


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["simulate", "capacity", *WINDOW, "--json", *args]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


@pytest.fixture(scope="module")
def both() -> dict[str, Any]:
    """One run of both policies (shared by the tests that only read it)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", "capacity", *WINDOW, "--json", "--seed", "3"]) == 0
    policies: dict[str, Any] = {p["policy"]: p for p in json.loads(out.getvalue())["policies"]}
    return policies


def test_both_policies_report_every_figure(both: dict[str, Any]) -> None:
    assert set(both) == {"gpupool", "tensorfusion", "gpupool+consolidation"}
    for row in both.values():
        assert 0 <= row["idleBeyondMinWarmGpuHours"] <= row["idleGpuHours"] + 0.02
        # the floor: whole GPUs for what the pods used plus min and warm; a policy's beyond falls
        # under it only in minutes it held less than warm (none here would be a violation of warm)
        assert 0 <= row["floorIdleBeyondMinWarmGpuHours"] < row["floorGpuHours"]
        assert row["atSpotCost"] is None  # no --spot-discount, no quoted Spot prices: no Spot column
        assert row["drains"] >= 0 and row["podsMoved"] >= 0
        assert row["pods"] == 40
        assert 0 <= row["unserved"] < row["pods"]
        assert row["cost"] > 0 and row["launches"] > 0
        assert 0 < row["gpuHoursUsed"] <= row["gpuHoursBought"]
        assert row["idleGpuHours"] == pytest.approx(row["gpuHoursBought"] - row["gpuHoursUsed"], abs=0.02)
        assert (
            row["p50TimeToCapacitySeconds"]
            <= row["p95TimeToCapacitySeconds"]
            <= row["maxTimeToCapacitySeconds"]
        )
        assert set(row["violationsByKind"]) == {"pastMax", "belowMin", "orphanInstances", "duplicateClaims"}
    assert both["gpupool"]["violations"] == 0
    assert both["tensorfusion"]["interruptionsHandled"] == 0  # it launches no Spot: nothing to handle


def test_the_same_seed_gives_the_same_figures(
    capsys: pytest.CaptureFixture[str], both: dict[str, Any]
) -> None:
    again = {p["policy"]: p for p in _json(capsys, "--seed", "3")["policies"]}
    assert again == both


def test_a_budget_below_the_demand_is_never_passed_and_the_reason_shows(
    capsys: pytest.CaptureFixture[str], both: dict[str, Any]
) -> None:
    budget_per_day = 24.0  # $1.00/h On-Demand: one g4dn.xlarge ($0.526/h), less than the demand needs
    assert both["gpupool"]["peakHourlyRate"] > budget_per_day / 24  # unbudgeted, it spends more
    rows = {
        p["policy"]: p
        for p in _json(capsys, "--budget-per-day", str(budget_per_day), "--seed", "3")["policies"]
    }
    gpupool, tensorfusion = rows["gpupool"], rows["tensorfusion"]
    assert 0 < gpupool["peakHourlyRate"] <= budget_per_day / 24
    assert gpupool["cost"] <= budget_per_day * 0.1
    assert gpupool["budgetRefusals"] > 0
    assert any("would pass budgetPerDay $24" in reason for reason in gpupool["budgetReasons"])
    # TensorFusion only reads the budget: it refuses nothing and passes it.
    assert tensorfusion["budgetRefusals"] == 0 and tensorfusion["peakHourlyRate"] > budget_per_day / 24


def test_table_and_plot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plot = tmp_path / "capacity.png"
    code = main(
        [
            "simulate",
            "capacity",
            *WINDOW,
            "--policy",
            "gpupool",
            "--plot",
            str(plot),
            "--budget-per-day",
            "12",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "40 pods over 0.1 simulated day(s), aws us-east-1, seed 0, budgetPerDay $12" in out
    assert out.splitlines()[1].split()[:3] == ["policy", "cost", "$"]
    assert any(line.startswith("gpupool ") for line in out.splitlines())
    assert "tensorfusion" not in out
    assert "launch(es) cut by the budget" in out
    assert "cost: " not in out  # one policy: nothing to compare
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--days", "0"], "--days: '0' must be a positive finite number"),
        (["--spot-interruption-share", "1.5"], "'1.5' must be between 0 and 1"),
        (["--budget-per-day", "-3"], "must be a non-negative finite number"),
        (["--cloud", "gcp"], "invalid choice: 'gcp'"),
        (["--mode", "direct"], "invalid choice: 'direct'"),
        (["--plot", "/no/such/folder/x.png"], "folder /no/such/folder does not exist"),
        (["--trace", "/no/such/trace.csv"], "/no/such/trace.csv: cannot read"),
    ],
)
def test_bad_input_is_one_clear_line_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    argv = ["simulate", "capacity", "--trace", str(TRACE), "--days", "0.1", *args]
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse refuses a bad value itself
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    assert code == 2
    assert message in captured.err
    assert captured.out == ""
    assert not list(tmp_path.iterdir())


def test_spot_rests_on_a_given_discount_never_on_the_catalogs_estimate(
    capsys: pytest.CaptureFixture[str], both: dict[str, Any]
) -> None:
    rows = {p["policy"]: p for p in _json(capsys, "--seed", "3", "--spot-discount", "0.6")["policies"]}
    assert rows["gpupool"]["cost"] == both["gpupool"]["cost"]  # the headline stays On-Demand
    assert rows["gpupool"]["atSpotCost"] == pytest.approx(rows["gpupool"]["cost"] * 0.4, abs=0.01)
    assert rows["tensorfusion"]["atSpotCost"] is None  # it launches On-Demand only
    # A Spot run without a quoted price or a discount is refused, naming why.
    assert main(["simulate", "capacity", *WINDOW, "--spot"]) == 2
    assert "Spot prices are an estimate, not a quote: give --spot-discount" in capsys.readouterr().err
    spot = {
        p["policy"]: p for p in _json(capsys, "--seed", "3", "--spot", "--spot-discount", "0.6")["policies"]
    }
    assert spot["gpupool"]["violations"] == 0 and spot["gpupool"]["atSpotCost"] is None
    assert main(["simulate", "capacity", *WINDOW, "--spot-discount", "0.6"]) == 0
    out = capsys.readouterr().out
    assert ", On-Demand prices;" in out.splitlines()[0]
    assert "idle GPU-h beyond min and warm: gpupool+consolidation " in out
    assert "at Spot: Spot at 60% off On-Demand, as --spot-discount gives it" in out


def test_a_bad_trace_row_names_the_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("name,arrival,departure,gpus\na,0,60,1\nb,100,50,1\n", encoding="utf-8")
    assert main(["simulate", "capacity", "--trace", str(trace), "--days", "0.01"]) == 2
    assert f"{trace}:3: departure 50 is not after arrival 100" in capsys.readouterr().err


def test_without_a_trace_it_plays_the_shipped_sample_wherever_it_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpupool.simulation.traces import sample_paths

    monkeypatch.chdir(tmp_path)  # no ../shared, no repository around the working directory
    assert main(["simulate", "capacity", "--days", "0.05", "--policy", "gpupool"]) == 0
    out = capsys.readouterr().out
    assert "; trace the shipped openb-shaped sample" in out.splitlines()[0]
    assert sample_paths()[1].is_file()


def test_karpenter_mode_serves_the_same_demand_without_a_violation(
    capsys: pytest.CaptureFixture[str], both: dict[str, Any]
) -> None:
    rows = {p["policy"]: p for p in _json(capsys, "--mode", "karpenter", "--seed", "3")["policies"]}
    gpupool = rows["gpupool"]
    assert gpupool["violations"] == 0 and gpupool["launches"] > 0
    assert gpupool["pods"] == 40 and gpupool["unserved"] <= both["gpupool"]["unserved"]
    assert 0 < gpupool["gpuHoursUsed"] <= gpupool["gpuHoursBought"]
    assert rows["tensorfusion"] == both["tensorfusion"], "TensorFusion's side does not change"
    assert main(["simulate", "capacity", *WINDOW, "--mode", "karpenter", "--policy", "gpupool"]) == 0
    assert "gpupool in Karpenter mode" in capsys.readouterr().out


def test_the_floor_line_prices_whole_gpus_for_use_plus_warm(
    capsys: pytest.CaptureFixture[str], both: dict[str, Any]
) -> None:
    args = [*WINDOW, "--seed", "3", "--policy", "gpupool", "--policy", "tensorfusion"]
    assert main(["simulate", "capacity", *args]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("floor "))
    gpupool, tensorfusion = both["gpupool"], both["tensorfusion"]
    floor_cost = gpupool["floorGpuHours"] * 0.526  # g4dn.xlarge, the pool's cheapest On-Demand GPU
    assert (
        f"{gpupool['floorGpuHours']:,.1f} GPU-h, {gpupool['floorIdleBeyondMinWarmGpuHours']:,.1f} beyond"
        in line
    )
    assert f"${floor_cost:,.2f} at g4dn.xlarge's $0.526 per GPU-h" in line
    assert f"({floor_cost / tensorfusion['cost']:.2f} × tensorfusion's)" in line
