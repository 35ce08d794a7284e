"""template.yaml's CloudWatch dashboard: its body is JSON once CloudFormation substitutes it (every
`${…}` a resource or pseudo parameter of the template); every gpupool metric it reads is one the
functions really emit (`alerts/emitted_metrics.emf_metrics`: captured from the handler's EMF
blobs), SEARCHed with exactly the dimension set it is emitted with, in the namespace template.yaml
gives Powertools; every capacity and per-pool gauge the service defines is on it; the AWS metrics
it reads are ones Lambda and SQS publish (names from AWS's Lambda and SQS metric documentation),
for this stack's functions and dead-letter queue. cfn-lint runs on the whole template in
test_template.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode  # type: ignore[import-untyped]

from gpupool.service.outcome_metrics import METRIC_NAMES, POOL_METRIC_NAMES

sys.path.insert(0, str(Path(__file__).parent / "alerts"))
from emitted_metrics import emf_metrics

ROOT = Path(__file__).resolve().parents[2]
SEARCH = re.compile(r"""SEARCH\('\{([^}]*)\} MetricName="(\w+)"((?: \w+="[^"]*")*)', '(\w+)', (\d+)\)""")
REFERENCE = re.compile(r"\$\{([\w:.]+)\}")
# Metrics AWS publishes (docs: Lambda function metrics; Amazon SQS available CloudWatch metrics).
AWS_METRICS = {
    ("AWS/Lambda", "Errors"): "FunctionName",
    ("AWS/Lambda", "Throttles"): "FunctionName",
    ("AWS/Lambda", "Duration"): "FunctionName",
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible"): "QueueName",
}
OWNERS = {
    "FunctionName": {"LaunchFunction", "BindFunction", "CompactFunction"},
    "QueueName": {"DeadLetterQueue.QueueName"},
}


def _template() -> dict[str, Any]:
    template, matches = decode(str(ROOT / "template.yaml"))
    assert not matches, matches
    assert isinstance(template, dict)
    return template


TEMPLATE = _template()


def _body() -> tuple[dict[str, Any], set[str]]:
    dashboard = TEMPLATE["Resources"]["Dashboard"]
    assert dashboard["Type"] == "AWS::CloudWatch::Dashboard"
    text = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    assert isinstance(text, str)
    references = set(REFERENCE.findall(text))
    return json.loads(REFERENCE.sub(lambda m: f"<{m.group(1)}>", text)), references


def test_the_body_is_json_and_references_only_what_the_template_has() -> None:
    body, references = _body()
    known = set(TEMPLATE["Resources"]) | {"AWS::Region", "AWS::StackName"}
    assert {ref.split(".")[0] for ref in references} <= known
    for widget in body["widgets"]:
        assert widget["x"] + widget["width"] <= 24 and widget["properties"]["title"]
        assert widget["properties"]["region"] == "<AWS::Region>"


def _metrics() -> list[tuple[str, Any]]:
    body, _ = _body()
    return [(w["properties"]["title"], m) for w in body["widgets"] for m in w["properties"]["metrics"]]


def test_every_gpupool_metric_is_emitted_with_the_dimensions_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emitted = emf_metrics(monkeypatch)
    namespace = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    searched = set()
    for title, metric in _metrics():
        if not (isinstance(metric[0], dict) and "expression" in metric[0]):
            continue
        found = SEARCH.fullmatch(metric[0]["expression"])
        assert found, (title, metric)
        schema, name, filters, _stat, period = found.groups()
        ns, *dimensions = schema.split(",")
        assert ns == namespace and int(period) == 60
        assert (ns, name) in emitted, f"{title}: {name} is never emitted"
        assert frozenset(dimensions) in emitted[(ns, name)], (
            f"{title}: {name} is emitted with {emitted[(ns, name)]}"
        )
        for key, value in re.findall(r'(\w+)="([^"]*)"', filters):
            assert key in dimensions and (key != "function" or value in ("launch", "bind", "compact"))
        searched.add(name)
    assert set(METRIC_NAMES) | set(POOL_METRIC_NAMES) <= searched, (
        set(METRIC_NAMES) | set(POOL_METRIC_NAMES) - searched
    )


def test_the_aws_metrics_are_published_ones_for_this_stack() -> None:
    seen = 0
    for title, metric in _metrics():
        if isinstance(metric[0], dict):
            continue
        ns, name, dimension, value, *_ = metric
        assert AWS_METRICS.get((ns, name)) == dimension, (title, metric)
        assert value.strip("<>") in OWNERS[dimension], (title, metric)
        seen += 1
    assert seen


def test_the_dashboard_name_is_an_output() -> None:
    assert TEMPLATE["Outputs"]["DashboardName"]["Value"] == {"Ref": "Dashboard"}
