"""What the code really exposes, for the tests that check dashboards and alerts against it.

`prometheus_series()`: every series name the node agent's and the relay's /metrics can carry
(`AgentMetrics`, `RelayMetrics`, the relay's allocation collector), each with its label names —
counters as `<name>_total`, histograms as `_bucket` (with `le`), `_sum` and `_count` — read from
the registries' own metric objects. `emf_metrics(monkeypatch)`: every EMF metric the functions
emit, by (namespace, name), with the dimension sets it is emitted with — captured from the EMF
blobs the real handler prints (`handlers.common.build_handler` through the Lambda handler) on
each of its paths: a handled invocation with capacity metrics and per-pool gauges, an ignored
event, a permanent failure, a retryable failure and an unsigned relay call with HMAC on, under
the Powertools service name and namespace template.yaml gives the functions. Tests only.
"""

from __future__ import annotations

import io
import json
import threading
from contextlib import redirect_stdout, suppress
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode  # type: ignore[import-untyped]
from prometheus_client.metrics import MetricWrapperBase

from gpupool.core.allocator import Allocator
from gpupool.core.planning.plan import Plan, RecordEvent
from gpupool.core.planning.pool_gauges import PoolGauges
from gpupool.handlers import aws_lambda, common
from gpupool.handlers.relay_auth import HMAC_SECRET_VARIABLE, HTTP_AUTH_VARIABLE
from gpupool.service.errors import PermanentError, Throttled
from gpupool.service.outcome import Outcome
from gpupool_incluster.agent.metrics import AgentMetrics
from gpupool_incluster.relay.metrics import RelayMetrics

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events" / "aws"
TARGET_LABELS = frozenset({"instance", "job", "pod"})  # what a Prometheus scrape adds (namespace collides)

_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


class _Hub:
    lock = threading.RLock()
    allocator = Allocator()


def prometheus_series() -> dict[str, frozenset[str]]:
    """Series name → its label names (`le` on histogram buckets)."""
    relay = RelayMetrics()
    relay.watch_allocation(_Hub())
    found: dict[str, frozenset[str]] = {}
    for owner in (AgentMetrics(), relay):
        for metric in vars(owner).values():
            if not isinstance(metric, MetricWrapperBase):
                continue
            labels = frozenset(metric._labelnames)
            for suffix in _SUFFIXES[metric._type]:
                found[metric._name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    for family in relay.registry.collect():  # the allocation collector's families
        if family.name not in found and family.type == "gauge":
            found[family.name] = frozenset(getattr(family, "_labelnames", ()))
    return found


def _template_environment() -> dict[str, str]:
    template, matches = decode(str(ROOT / "template.yaml"))
    assert not matches, matches
    variables: dict[str, Any] = template["Globals"]["Function"]["Environment"]["Variables"]
    return {k: v for k, v in variables.items() if isinstance(v, str) and k.startswith("POWERTOOLS_")}


def _blobs(printed: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in printed.splitlines() if '"_aws"' in line]


def emf_metrics(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], set[frozenset[str]]]:
    """(namespace, metric name) → the dimension sets it is emitted with."""
    environment = _template_environment()
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(common.metrics, "service", environment["POWERTOOLS_SERVICE_NAME"])
    monkeypatch.setattr(common, "NAMESPACE", environment["POWERTOOLS_METRICS_NAMESPACE"])
    monkeypatch.setattr(common.metrics.provider, "namespace", environment["POWERTOOLS_METRICS_NAMESPACE"])
    event = RecordEvent(
        pool="p",
        object_kind="GPUPool",
        object_name="p",
        event_type="Warning",
        reason="BudgetExceeded",
        message="m",
    )
    busy = Outcome(
        plan=Plan(actions=(event,)),
        applied=[{"action": "launch-instance", "result": "applied"}],
        gauges=[PoolGauges("p", 65.0, 1.0, 1.0, 50.0, 10.0, 10.0)],
    )

    def service(outcome: Outcome | None = None, error: Exception | None = None) -> Any:
        def entry(cause: Any, deps: Any, /, *, dry_run: bool = False) -> Outcome:
            if error is not None:
                raise error
            assert outcome is not None
            return outcome

        return lambda: entry

    scheduled = json.loads((EVENTS / "scheduled-event.json").read_text())
    relay_call = json.loads((EVENTS / "function-url-pod-unschedulable.json").read_text())
    calls: list[tuple[Any, Any, dict[str, str]]] = [
        (service(busy), scheduled, {}),
        (service(busy), {"unknown": "event"}, {}),
        (service(error=PermanentError("no")), scheduled, {}),
        (service(error=Throttled("later")), scheduled, {}),
        (service(busy), relay_call, {HTTP_AUTH_VARIABLE: "hmac", HMAC_SECRET_VARIABLE: "s3cret"}),  # unsigned
    ]
    printed = io.StringIO()
    for entry, body, env in calls:
        with monkeypatch.context() as patched:
            for key, value in env.items():
                patched.setenv(key, value)
            handler = aws_lambda.make_handler("launch", lambda: object(), service=entry)  # type: ignore[arg-type,return-value]
            with redirect_stdout(printed), suppress(common.RetryableFailure, Throttled):  # it would retry
                handler(body, None)
    emitted: dict[tuple[str, str], set[frozenset[str]]] = {}
    for blob in _blobs(printed.getvalue()):
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            for dimensions in directive["Dimensions"]:
                for metric in directive["Metrics"]:
                    emitted.setdefault((directive["Namespace"], metric["Name"]), set()).add(
                        frozenset(dimensions)
                    )
    return emitted
