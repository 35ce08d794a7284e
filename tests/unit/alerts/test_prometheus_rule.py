"""The chart's PrometheusRule: rendered only when asked, one rule per TensorFusion built-in alert
that applies (thresholds and durations kept) and gpupool's own relay delivery rules (401 / 403
refusals, events given up), each expression evaluated by the PromQL subset
(`promql_subset.py`) to fire on a bad series and stay quiet on a good one, and every metric it
reads one that the agent or the relay really exposes (and every metric added for alerts used)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from gpupool.core.allocator import Allocator
from gpupool_incluster.agent.metrics import AgentMetrics
from gpupool_incluster.relay.allocation_metrics import ALLOCATION_METRICS
from gpupool_incluster.relay.metrics import RelayMetrics

sys.path.insert(0, str(Path(__file__).parent))
from promql_subset import firing, metric_names, parse, seconds

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "incluster" / "chart"
STEP = 15.0
END = 2400.0  # 40 minutes of samples, evaluated every 15 s
TIMES = [i * STEP for i in range(int(END / STEP) + 1)]

# TensorFusion's 15 built-in rules (its chart's dynamicConfig.alertRules): the gpupool rule, and
# TensorFusion's evaluationInterval × consecutiveCount (None: fires on the first evaluation).
TF_ALERTS: dict[str, tuple[str | None, str | None]] = {
    "WorkerTFlopsThrottled": ("WorkerTFlopsThrottled", "45s"),
    "WorkerVRAMSwitchCountIncreasing": ("WorkerVRAMLimitEnforced", None),
    "WorkerAllocationFailed": ("WorkerAllocationFailed", None),
    "GPUVRAMFull": ("GPUVRAMFull", "1m"),
    "GPUTFlopsFull": ("GPUTFlopsFull", "2m"),
    "GPUTemperatureHigh": (None, None),  # the agent reads no temperature (docs/alerts.md)
    "NodeTFlopsAllocationCritical": ("NodeTFlopsAllocationCritical", "2m"),
    "NodeTFlopsAllocationWarning": ("NodeTFlopsAllocationWarning", "2m"),
    "PoolTotalTFlopsAllocationCritical": ("PoolTotalTFlopsAllocationCritical", "2m"),
    "PoolTotalTFlopsAllocationWarning": ("PoolTotalTFlopsAllocationWarning", "2m"),
    "NodeVRAMAllocationCritical": ("NodeVRAMAllocationCritical", "2m"),
    "NodeVRAMAllocationWarning": ("NodeVRAMAllocationWarning", "2m"),
    "PoolVRAMAllocationWarning": ("PoolVRAMAllocationWarning", "2m"),
    "EmptyGPU": ("EmptyGPU", "10m"),
    "IdleGPU": ("IdleGPU", "30m"),
}


# gpupool's own rules (no TensorFusion counterpart): the relay's deliveries to the functions.
GPUPOOL_ALERTS = {"RelayDeliveryUnauthorized": "2m", "RelayEventsDropped": None}


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


@pytest.fixture(scope="module")
def rules() -> dict[str, dict[str, Any]]:
    objects = render({"prometheusRule": {"enabled": True, "labels": {"release": "kps"}}})
    [rule] = [o for o in objects if o["kind"] == "PrometheusRule"]
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["metadata"]["labels"]["release"] == "kps"
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}


def test_not_rendered_unless_asked() -> None:
    assert not [o for o in render({}) if o["kind"] == "PrometheusRule"]


def test_the_schema_refuses_bad_values() -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        render({"prometheusRule": {"enabled": "yes"}})
    with pytest.raises(helm.HelmValuesError, match="schema"):
        render({"prometheusRule": {"enabled": True, "threshold": 5}})


def test_one_rule_per_applicable_tensorfusion_alert(rules: dict[str, dict[str, Any]]) -> None:
    wanted = {rule for rule, _ in TF_ALERTS.values() if rule}
    assert set(rules) == wanted | set(GPUPOOL_ALERTS)
    for rule, hold in GPUPOOL_ALERTS.items():
        assert rules[rule].get("for") == hold, rule
    for tf_name, (rule, hold) in TF_ALERTS.items():
        if rule:
            assert rules[rule].get("for") == hold, tf_name
            assert rules[rule]["labels"]["severity"] in {"critical", "warning", "info"}


def gauge(name: str, labels: dict[str, str], value: float, *, since: float = 0.0) -> Any:
    return (name, labels, [(t, value) for t in TIMES if t >= since])


def counter(name: str, labels: dict[str, str], *, per_step: float = 0.0, bump_at: float | None = None) -> Any:
    """A counter growing by `per_step` each sample, or flat with one step up at `bump_at`."""
    points = []
    for i, t in enumerate(TIMES):
        points.append((t, 10.0 + per_step * i + (1.0 if bump_at is not None and t >= bump_at else 0.0)))
    return (name, labels, points)


WORKER = {"node": "n1", "namespace": "team", "worker": "w"}
GPU = {"node": "n1", "uuid": "GPU-1"}


def gpu(used_gib: float, compute: float, *, compute_from: tuple[float, float] | None = None) -> list[Any]:
    """One GPU of 100 GiB; `compute_from` (time, value): the compute share changes then."""
    usage = [(t, compute_from[1] if compute_from and t >= compute_from[0] else compute) for t in TIMES]
    return [
        gauge("tf_gpu_usage_memory_bytes", GPU, used_gib * 2**30),
        gauge("tf_gpu_memory_total_bytes", GPU, 100 * 2**30),
        ("tf_gpu_usage_compute_percentage", GPU, usage),
    ]


def nodes(dimension: str, available: dict[str, float], *, capacity: float = 100.0) -> list[Any]:
    """Two relay replicas report the same allocation for each node of pool p."""
    unit = "_bytes" if dimension == "vram" else ""
    series = []
    for node, free in available.items():
        for replica in ("relay-0", "relay-1"):
            labels = {"node": node, "pool": "p", "instance": replica}
            series.append(gauge(f"gpupool_node_{dimension}_available{unit}", labels, free))
            series.append(gauge(f"gpupool_node_{dimension}_capacity{unit}", labels, capacity))
    return series


N1 = {"node": "n1", "pool": "p"}
LAUNCH = {"type": "pod.unschedulable", "function": "launch", "instance": "relay-0"}
FAILURES = "gpupool_relay_delivery_failures_total"
POOL = {"pool": "p"}
# rule → (a series it must fire on, the labels it fires with, a series it must stay quiet on)
CASES: dict[str, tuple[list[Any], dict[str, str], list[Any]]] = {
    "WorkerTFlopsThrottled": (
        [counter("tf_worker_throttled_seconds_total", WORKER, per_step=0.5)],
        WORKER,
        [counter("tf_worker_throttled_seconds_total", WORKER)],
    ),
    "WorkerVRAMLimitEnforced": (
        [
            counter("tf_worker_vram_kills_total", WORKER),
            counter("tf_worker_vram_evictions_total", WORKER, bump_at=END - 30),
        ],
        WORKER,
        [counter("tf_worker_vram_kills_total", WORKER, bump_at=END - 600)],  # 10 minutes ago
    ),
    "WorkerAllocationFailed": (
        [counter("gpupool_relay_allocation_failures_total", {"pool": "p", "instance": "r"}, bump_at=END)],
        POOL,
        [counter("gpupool_relay_allocation_failures_total", {"pool": "p", "instance": "r"})],
    ),
    "GPUVRAMFull": (gpu(98, 50), GPU, gpu(90, 50)),
    # 99 % for the last minute only is shorter than the 2-minute hold
    "GPUTFlopsFull": (gpu(50, 99), GPU, gpu(50, 96, compute_from=(END - 60, 99))),
    # low compute alone is not idle: the VRAM must be nearly empty too
    "IdleGPU": (gpu(2, 0.5), GPU, gpu(50, 0.5)),
    "NodeTFlopsAllocationCritical": (nodes("tflops", {"n1": 4, "n2": 50}), N1, nodes("tflops", {"n1": 6})),
    "NodeTFlopsAllocationWarning": (nodes("tflops", {"n1": 8, "n2": 50}), N1, nodes("tflops", {"n1": 10})),
    "PoolTotalTFlopsAllocationCritical": (
        nodes("tflops", {"n1": 4, "n2": 5}),
        POOL,
        nodes("tflops", {"n1": 4, "n2": 6}),  # exactly 5 % left: not below it
    ),
    "PoolTotalTFlopsAllocationWarning": (
        nodes("tflops", {"n1": 9, "n2": 10}),
        POOL,
        nodes("tflops", {"n1": 0, "n2": 30}),
    ),
    "NodeVRAMAllocationCritical": (nodes("vram", {"n1": 4}), N1, nodes("vram", {"n1": 7})),
    "NodeVRAMAllocationWarning": (nodes("vram", {"n1": 9}), N1, nodes("vram", {"n1": 11})),
    "PoolVRAMAllocationWarning": (
        nodes("vram", {"n1": 2, "n2": 17}),
        POOL,
        nodes("vram", {"n1": 2, "n2": 40}),
    ),
    # every retry of a refused delivery counts; a 503 outage is not an authentication problem
    "RelayDeliveryUnauthorized": (
        [
            counter(FAILURES, {**LAUNCH, "reason": "401"}, per_step=1),
            counter(FAILURES, {**LAUNCH, "reason": "503"}, per_step=1),
        ],
        {"function": "launch"},
        [
            counter(FAILURES, {**LAUNCH, "reason": "503"}, per_step=1),
            counter(FAILURES, {**LAUNCH, "reason": "403"}, bump_at=END - 1200),  # 20 minutes ago
            counter(FAILURES, {**LAUNCH, "reason": "401"}, bump_at=END - 60),  # shorter than the hold
        ],
    ),
    "RelayEventsDropped": (
        [counter("gpupool_relay_events_dropped_total", {**LAUNCH, "reason": "attempts"}, bump_at=END - 120)],
        {"function": "launch", "reason": "attempts"},
        [counter("gpupool_relay_events_dropped_total", {**LAUNCH, "reason": "attempts"}, bump_at=END - 1200)],
    ),
    "EmptyGPU": (
        [gauge("gpupool_node_workers", {**N1, "instance": "r"}, 0)],
        N1,
        [
            gauge("gpupool_node_workers", {**N1, "instance": "r"}, 0, since=END - 300),
            gauge("gpupool_node_workers", {"node": "n2", "pool": "p", "instance": "r"}, 2),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_rule_fires_on_a_bad_series_and_not_on_a_good_one(
    name: str, rules: dict[str, dict[str, Any]]
) -> None:
    rule = rules[name]
    bad, labels, good = CASES[name]
    assert firing(rule["expr"], rule.get("for"), bad, TIMES) == {frozenset(labels.items())}
    assert firing(rule["expr"], rule.get("for"), good, TIMES) == set()


def test_every_rule_has_its_cases(rules: dict[str, dict[str, Any]]) -> None:
    assert set(CASES) == set(rules)


class _Hub:
    lock = threading.RLock()
    allocator = Allocator()


def exposed_names() -> set[str]:
    """Every series name the agent's and the relay's /metrics can carry."""
    relay = RelayMetrics()
    relay.watch_allocation(_Hub())
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    names = set()
    for registry in (AgentMetrics().registry, relay.registry):
        for family in registry.collect():
            names |= {family.name + suffix for suffix in suffixes.get(family.type, ("",))}
    return names


def test_every_metric_a_rule_reads_is_exposed_and_every_alert_metric_is_read(
    rules: dict[str, dict[str, Any]],
) -> None:
    used = set().union(*(metric_names(parse(r["expr"])) for r in rules.values()))
    exposed = exposed_names()
    assert used <= exposed, used - exposed
    added_for_alerts = set(ALLOCATION_METRICS) | {
        "gpupool_relay_allocation_failures_total",
        FAILURES,
        "gpupool_relay_events_dropped_total",
    }
    assert added_for_alerts <= used, added_for_alerts - used


def test_docs_list_every_tensorfusion_alert_and_rule(rules: dict[str, dict[str, Any]]) -> None:
    text = (ROOT / "docs" / "alerts.md").read_text()
    missing = [name for name in [*TF_ALERTS, *rules] if f"`{name}`" not in text]
    assert not missing, missing


def test_durations_are_what_the_subset_reads(rules: dict[str, dict[str, Any]]) -> None:
    for rule in rules.values():
        if "for" in rule:
            assert seconds(rule["for"]) > 0
