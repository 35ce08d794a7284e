"""The chart's alert rules by Prometheus's own promtool (built from its Go module by `gpupool sandbox
build`): `promtool check rules` accepts the PrometheusRule's groups as Prometheus would load them,
and `promtool test rules` — Prometheus's rule engine, `for` holds included — fires every alert on
its bad series and keeps it silent on its good one. The series are the cases of
test_prometheus_rule.py (one firing and one silent case per alert, every alert covered), sampled
every 15 s for 40 minutes and evaluated at the end, so the PromQL subset those tests use and the
real engine are held to the same answers.

The unit-test file leaves the rules' annotations out: promtool compares expected annotations
verbatim, and they carry `$value`; `check rules` reads the annotations' templates.
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
from test_prometheus_rule import CASES, END, STEP, TIMES, render


@pytest.fixture(scope="module")
def promtool() -> Path:
    return real_tool("promtool")


@pytest.fixture(scope="module")
def groups() -> list[dict[str, Any]]:
    objects = render({"prometheusRule": {"enabled": True}})
    [rule] = [o for o in objects if o["kind"] == "PrometheusRule"]
    found: list[dict[str, Any]] = rule["spec"]["groups"]
    return found


def _run(promtool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_promtool_checks_the_rules(promtool: Path, groups: list[dict[str, Any]], tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    done = _run(promtool, "check", "rules", "rules.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    count = sum(len(group["rules"]) for group in groups)
    assert f"SUCCESS: {count} rules found" in done.stdout, done.stdout


def test_promtool_refuses_a_broken_rule(promtool: Path, groups: list[dict[str, Any]], tmp_path: Path) -> None:
    """The check is real: a rule with a bad expression is refused."""
    broken = [{**groups[0], "rules": [{**groups[0]["rules"][0], "expr": "sum by (node) (rate(x[1m]) >"}]}]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": broken}))
    done = _run(promtool, "check", "rules", "rules.yaml", cwd=tmp_path)
    assert done.returncode != 0 and "rules.yaml" in done.stdout + done.stderr


def _series(name: str, labels: dict[str, str], points: list[tuple[float, float]]) -> dict[str, str]:
    """One input series in promtool's notation: a value per 15-s step from 0, `_` where none."""
    at = dict(points)
    values = " ".join(repr(at[t]) if t in at else "_" for t in TIMES)
    selector = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return {"series": f"{name}{{{selector}}}", "values": values}


def _unit_tests(groups: list[dict[str, Any]]) -> dict[str, Any]:
    rules = {rule["alert"]: rule for group in groups for rule in group["rules"]}
    tests = []
    for name, (bad, labels, good) in sorted(CASES.items()):
        fired = {**labels, **rules[name].get("labels", {})}
        for case, series, expected in (("fires", bad, [{"exp_labels": fired}]), ("silent", good, [])):
            tests.append(
                {
                    "name": f"{name} {case}",
                    "interval": f"{int(STEP)}s",
                    "input_series": [_series(*one) for one in series],
                    "alert_rule_test": [
                        {"eval_time": f"{int(END)}s", "alertname": name, "exp_alerts": expected}
                    ],
                }
            )
    return {"rule_files": ["rules.yaml"], "evaluation_interval": f"{int(STEP)}s", "tests": tests}


def _test_rules(
    promtool: Path, groups: list[dict[str, Any]], tests: list[dict[str, Any]], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` of `tests` on the groups without their annotations."""
    bare = [
        {**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]}
        for g in groups
    ]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": bare}))
    unit = {**_unit_tests(groups), "tests": tests}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(unit, width=10**9))
    return _run(promtool, "test", "rules", "tests.yaml", cwd=tmp_path)


def test_promtool_fires_each_alert_on_its_bad_series_and_not_on_its_good_one(
    promtool: Path, groups: list[dict[str, Any]], tmp_path: Path
) -> None:
    tests = _unit_tests(groups)["tests"]
    assert {t["name"].rsplit(" ", 1)[0] for t in tests} == {r["alert"] for g in groups for r in g["rules"]}, (
        "an alert without its cases"
    )
    assert len(tests) == 2 * len(CASES)  # a firing and a silent case each
    done = _test_rules(promtool, groups, tests, tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert "SUCCESS" in done.stdout


def test_promtool_test_rules_notices_a_wrong_expectation(
    promtool: Path, groups: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The unit test is real: expecting silence where the rule fires fails."""
    firing = [t for t in _unit_tests(groups)["tests"] if t["name"].endswith(" fires")][:1]
    firing[0]["alert_rule_test"][0]["exp_alerts"] = []
    done = _test_rules(promtool, groups, firing, tmp_path)
    assert done.returncode != 0
