"""The chart's Grafana dashboards: rendered only when asked, one ConfigMap per dashboard labelled for
Grafana's dashboard sidecar (label, namespace and annotations configurable, bad values refused by
the schema); each dashboard well formed (unique uid and panel ids, a data source variable per
data source, every variable it uses defined); every Prometheus panel expression read by the
PromQL subset the alert tests use (`alerts/promql_subset.py`), selecting only series the agent's
and the relay's registries really expose, with only the labels those series carry, and
evaluating to a value on series of that shape; every CloudWatch panel reading an EMF metric the
functions really emit, with the exact dimension set they emit it with (`alerts/emitted_metrics`);
and the panels the issue asks for present on each dashboard."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent / "alerts"))
from emitted_metrics import TARGET_LABELS, emf_metrics, prometheus_series
from promql_subset import Node, PromqlError, evaluate, parse

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "incluster" / "chart"
FILES = sorted((CHART / "files" / "dashboards").glob("*.json"))
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
# What a Grafana variable stands for when the expression is read: every value of a multi-value
# query variable (its allValue), a range Grafana picks.
STAND_INS = {"__rate_interval": "5m", "__interval": "1m"}
FUNCTIONS = {"launch", "bind", "compact"}


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


def dashboards() -> dict[str, dict[str, Any]]:
    return {path.stem: json.loads(path.read_text()) for path in FILES}


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from board["panels"]


def test_not_rendered_unless_asked() -> None:
    assert not [o for o in render({}) if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]]


def test_one_configmap_per_dashboard_labelled_for_the_sidecar() -> None:
    maps = {
        o["metadata"]["name"]: o
        for o in render({"dashboards": {"enabled": True}})
        if o["kind"] == "ConfigMap"
    }
    mine = {name: cm for name, cm in maps.items() if "gpupool-dashboard-" in name}
    assert set(mine) == {f"gp-gpupool-dashboard-{p.stem}" for p in FILES}
    assert {p.stem for p in FILES} == {"pools", "scheduling", "nodes", "relay"}
    for path in FILES:
        cm = mine[f"gp-gpupool-dashboard-{path.stem}"]
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["namespace"] == "gpupool-system"
        [(key, text)] = cm["data"].items()
        assert key == f"gpupool-{path.stem}.json" and json.loads(text) == json.loads(path.read_text())


def test_the_label_namespace_and_annotations_can_be_set() -> None:
    values = {
        "enabled": True,
        "label": "dashboards",
        "labelValue": "gpu",
        "namespace": "monitoring",
        "annotations": {"grafana_folder": "gpupool"},
    }
    maps = [
        o
        for o in render({"dashboards": values})
        if o["kind"] == "ConfigMap" and "dashboard-" in o["metadata"]["name"]
    ]
    assert len(maps) == len(FILES)
    for cm in maps:
        assert (
            cm["metadata"]["labels"]["dashboards"] == "gpu"
            and "grafana_dashboard" not in cm["metadata"]["labels"]
        )
        assert cm["metadata"]["namespace"] == "monitoring"
        assert cm["metadata"]["annotations"] == {"grafana_folder": "gpupool"}


@pytest.mark.parametrize(
    "bad",
    [
        {"enabled": "yes"},
        {"enabled": True, "label": "not a label"},
        {"enabled": True, "namespace": "Bad_NS"},
        {"enabled": True, "folder": "x"},
    ],
)
def test_the_schema_refuses_bad_values(bad: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        render({"dashboards": bad})


def test_each_dashboard_is_well_formed() -> None:
    uids = set()
    for name, board in dashboards().items():
        assert (
            board["uid"] not in uids
            and board["title"].startswith("gpupool / ")
            and "gpupool" in board["tags"]
        )
        uids.add(board["uid"])
        variables = {v["name"]: v for v in board["templating"]["list"]}
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids)), name
        titles = [p["title"] for p in board["panels"]]
        assert len(titles) == len(set(titles)), name
        for panel in panels(board):
            assert (
                panel["description"]
                and panel["gridPos"]["x"] >= 0
                and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
            )
            source = panel["datasource"]
            assert source["uid"] in ("${datasource}", "${cloudwatch}"), panel["title"]
            variable = variables[source["uid"][2:-1]]
            assert variable["type"] == "datasource" and variable["query"] == source["type"]
            for target in panel["targets"]:
                assert target["datasource"] == source
                used = {a or b for a, b in VARIABLE.findall(json.dumps(target))} - set(STAND_INS) - {"PROP"}
                assert used <= set(variables), (panel["title"], used - set(variables))


def _selectors(tree: Node) -> Iterator[Node]:
    if tree.kind == "sel":
        yield tree
    for arg in tree.args:
        yield from _selectors(arg)


def _by_labels(tree: Node) -> Iterator[tuple[tuple[str, ...], Node]]:
    if tree.kind == "agg":
        yield tree.by, tree.args[0]
    for arg in tree.args:
        yield from _by_labels(arg)


def _filled(expr: str, variables: dict[str, dict[str, Any]]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in STAND_INS:
            return STAND_INS[name]
        return str(variables[name].get("allValue", ".*"))

    return VARIABLE.sub(value, expr)


def _series_for(tree: Node, exposed: dict[str, frozenset[str]], value: float) -> list[Any]:
    """Series of the shape the registries expose, for every selector of `tree`: labels from its
    equality matchers (else a placeholder), buckets for histograms, counters growing."""
    series: list[Any] = []
    for selector in _selectors(tree):
        fixed = {label: text for label, op, text in selector.matchers if op == "="}
        labels = {label: fixed.get(label, f"{label}-1") for label in exposed[selector.name] - {"le"}}
        growing = selector.name.endswith(("_total", "_count", "_sum", "_bucket"))
        if selector.name.endswith("_bucket"):
            for bound, share in (("0.1", 0.5), ("1", 0.9), ("+Inf", 1.0)):
                points = [(t, 10.0 * share * t / 60) for t in range(0, 601, 15)]
                series.append((selector.name, {**labels, "le": bound}, points))
        else:
            points = [(t, (value + t / 60) if growing else value) for t in range(0, 601, 15)]
            series.append((selector.name, labels, points))
    return series


def prometheus_targets() -> Iterator[tuple[str, str, str, dict[str, dict[str, Any]]]]:
    for name, board in dashboards().items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        for panel in panels(board):
            if panel["datasource"]["type"] == "prometheus":
                for target in panel["targets"]:
                    yield name, panel["title"], target["expr"], variables


PROMETHEUS_TARGETS = list(prometheus_targets())


@pytest.mark.parametrize(
    ("board", "title", "expr", "variables"),
    PROMETHEUS_TARGETS,
    ids=[f"{b}:{t}:{e[:40]}" for b, t, e, _ in PROMETHEUS_TARGETS],
)
def test_every_prometheus_panel_reads_exposed_series_with_their_labels(
    board: str, title: str, expr: str, variables: dict[str, dict[str, Any]]
) -> None:
    exposed = prometheus_series()
    tree = parse(_filled(expr, variables))
    for selector in _selectors(tree):
        assert selector.name in exposed, f"{title}: {selector.name} is not exposed"
        for label, _, _ in selector.matchers:
            assert label in exposed[selector.name] | TARGET_LABELS, (
                f"{title}: {selector.name} has no label {label}"
            )
    for by, argument in _by_labels(tree):
        carried = set().union(*(exposed[s.name] for s in _selectors(argument))) | TARGET_LABELS
        assert set(by) <= carried, f"{title}: by {set(by) - carried} that {expr} does not carry"
    results = [evaluate(tree, _series_for(tree, exposed, value), 600.0) for value in (0.0, 1.0)]
    assert any(isinstance(r, dict) and r for r in results), (
        f"{title}: {expr} gives nothing on series of the exposed shape"
    )


def test_every_query_variable_reads_an_exposed_label() -> None:
    exposed = prometheus_series()
    for board in dashboards().values():
        for variable in board["templating"]["list"]:
            if variable["type"] != "query":
                continue
            found = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"]["query"])
            assert found, variable
            assert found.group(2) in exposed[found.group(1)], variable


def cloudwatch_targets() -> Iterator[tuple[str, dict[str, Any]]]:
    for board in dashboards().values():
        for panel in panels(board):
            if panel["datasource"]["type"] == "cloudwatch":
                for target in panel["targets"]:
                    yield panel["title"], target


def test_every_cloudwatch_panel_reads_an_emf_metric_with_the_dimensions_it_is_emitted_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emitted = emf_metrics(monkeypatch)
    targets = list(cloudwatch_targets())
    assert targets
    for title, target in targets:
        key = (target["namespace"], target["metricName"])
        assert key in emitted, f"{title}: {key} is never emitted"
        dimensions = target["dimensions"]
        assert frozenset(dimensions) in emitted[key], (
            f"{title}: {key} is emitted with {emitted[key]}, not {set(dimensions)}"
        )
        assert dimensions["service"] == "gpupool" and dimensions["function"] in FUNCTIONS
        assert target["matchExact"] is True  # CloudWatch matches the whole dimension set


def test_the_subset_refuses_what_it_cannot_read() -> None:
    with pytest.raises(PromqlError):
        parse("topk(3, gpupool_node_workers)")


WANTED = {
    "pools": {
        "gpupool_node_tflops_capacity",
        "gpupool_node_vram_capacity_bytes",
        "CapacityGapTFlops",
        "HourlyCost",
        "BudgetUse",
    },
    "scheduling": {
        'route="filter"',
        'route="bind"',
        "gpupool_relay_allocation_failures_total",
        "gpupool_node_workers",
    },
    "nodes": {
        "tf_gpu_usage_compute_percentage",
        "tf_worker_throttled_seconds_total",
        "tf_worker_vram_kills_total",
        "tf_gpu_usable",
    },
    "relay": {
        "gpupool_relay_events_seen_total",
        "gpupool_relay_events_delivered_total",
        "gpupool_relay_events_dropped_total",
        "gpupool_relay_queue_depth",
        "gpupool_relay_watch_restarts_total",
        "gpupool_relay_leader",
    },
}


@pytest.mark.parametrize("name", sorted(WANTED))
def test_each_dashboard_has_the_panels_the_issue_asks_for(name: str) -> None:
    text = json.dumps(dashboards()[name]["panels"]).replace('\\"', '"')
    missing = [wanted for wanted in WANTED[name] if wanted not in text]
    assert not missing, missing


def test_the_docs_list_every_panel() -> None:
    text = (ROOT / "docs" / "observability.md").read_text()
    missing = [
        f"{name}: {p['title']}"
        for name, board in dashboards().items()
        for p in panels(board)
        if f"| {p['title']} |" not in text
    ]
    assert not missing, missing


def test_every_alert_points_at_a_panel_that_exists() -> None:
    objects = render({"prometheusRule": {"enabled": True}})
    [rule] = [o for o in objects if o["kind"] == "PrometheusRule"]
    alerts = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
    by_title = {board["title"]: {p["title"] for p in panels(board)} for board in dashboards().values()}
    text = (ROOT / "docs" / "observability.md").read_text()
    rows = {
        found.group(1): (found.group(2), found.group(3))
        for found in re.finditer(r"^\| `(\w+)` \| (gpupool / [^|]+?) \| ([^|]+?) \|$", text, re.MULTILINE)
    }
    assert set(rows) == alerts, set(rows) ^ alerts
    for alert, (board, panel) in rows.items():
        assert panel in by_title[board], (alert, board, panel)
