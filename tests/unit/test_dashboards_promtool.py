"""Every Prometheus expression of the chart's Grafana dashboards, read by Prometheus's own engine
(promtool, built from its Go module by `gpupool sandbox build`) against the metric names and labels
the agent's and the relay's registries really expose.

Each panel expression, Grafana's variables filled in as test_chart_dashboards.py fills them, is
evaluated by `promtool test rules` over series of exactly the registered names and label sets (the
series test_chart_dashboards.py builds for the PromQL subset), and must give a value: a syntax error,
a metric name the code does not register or a label it does not carry leaves the expression empty
or unparsed, and promtool says which. So the subset's answer is checked against the real engine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.programs import real_tool

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "alerts"))
from emitted_metrics import prometheus_series
from promql_subset import evaluate, parse
from test_chart_dashboards import PROMETHEUS_TARGETS, _filled, _series_for

EVAL_AT = 600  # seconds: the series run from 0 to 600 every 15 s, as the subset's check reads them
STEP = 15


def _input(series: list[Any]) -> list[dict[str, str]]:
    found = []
    for name, labels, points in series:
        at = dict(points)
        values = " ".join(repr(float(at[t])) if t in at else "_" for t in range(0, EVAL_AT + 1, STEP))
        selector = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
        found.append({"series": f"{name}{{{selector}}}", "values": values})
    return found


def _case(index: int, title: str, expr: str, variables: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A promtool unit test: on series of the exposed shape (the value the subset finds a result
    for), `absent(expr)` is empty — the expression gives something."""
    filled = _filled(expr, variables)
    tree = parse(filled)
    exposed = prometheus_series()
    for value in (0.0, 1.0):
        series = _series_for(tree, exposed, value)
        result = evaluate(tree, series, float(EVAL_AT))
        if isinstance(result, dict) and result:
            break
    return {
        "name": f"{index}: {title}: {filled}",
        "interval": f"{STEP}s",
        "input_series": _input(series),
        "promql_expr_test": [{"expr": f"absent({filled})", "eval_time": f"{EVAL_AT}s", "exp_samples": []}],
    }


@pytest.fixture(scope="module")
def promtool() -> Path:
    return real_tool("promtool")


def _test_rules(
    promtool: Path, cases: list[dict[str, Any]], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": cases}, width=10**9)
    )
    return subprocess.run(
        [str(promtool), "test", "rules", "tests.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )


def test_promtool_reads_every_dashboard_expression_on_the_registered_series(
    promtool: Path, tmp_path: Path
) -> None:
    assert len(PROMETHEUS_TARGETS) >= 10
    cases = [
        _case(i, title, expr, variables) for i, (_, title, expr, variables) in enumerate(PROMETHEUS_TARGETS)
    ]
    done = _test_rules(promtool, cases, tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]


def test_promtool_finds_an_unregistered_metric_name(promtool: Path, tmp_path: Path) -> None:
    """The check is real: a panel reading a name no registry exposes gives nothing."""
    _, title, expr, variables = PROMETHEUS_TARGETS[0]
    case = _case(0, title, expr, variables)
    name = case["input_series"][0]["series"].split("{")[0]
    case["promql_expr_test"][0]["expr"] = case["promql_expr_test"][0]["expr"].replace(name, name + "_renamed")
    assert _test_rules(promtool, [case], tmp_path).returncode != 0
