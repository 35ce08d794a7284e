"""The chart's scheduler templates render offline and wire the extender and the webhook as documented."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

helm = pytest.importorskip("helm_python")

CHART = Path(__file__).resolve().parents[3] / "incluster" / "chart"


def _documents(values: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return {
        path: [d for d in yaml.safe_load_all(text) if d]
        for path, text in rendered.items()
        if "/templates/scheduler-" in path
    }


def test_scheduler_config_wires_the_extender() -> None:
    docs = _documents({})
    config_map = docs["gpupool/templates/scheduler-config.yaml"][0]
    config = yaml.safe_load(config_map["data"]["scheduler-config.yaml"])
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["profiles"][0]["schedulerName"] == "tensor-fusion-scheduler"
    extender = config["extenders"][0]
    assert extender["urlPrefix"] == "http://127.0.0.1:8444/scheduler"  # loopback only, see test_chart_wiring
    assert (extender["filterVerb"], extender["prioritizeVerb"], extender["bindVerb"]) == (
        "filter",
        "prioritize",
        "bind",
    )
    assert extender["nodeCacheCapable"] is True
    names = [r["name"] for r in extender["managedResources"]]
    assert (
        names[0] == "tensor-fusion.ai/index_0"
        and names[-1] == "tensor-fusion.ai/index_f"
        and len(names) == 16
    )
    assert all(r["ignoredByScheduler"] for r in extender["managedResources"])


def test_webhook_selects_enabled_pods_unless_progressive_migration() -> None:
    webhook = next(
        d
        for d in _documents({})["gpupool/templates/scheduler-webhook.yaml"]
        if d["kind"] == "MutatingWebhookConfiguration"
    )["webhooks"][0]
    assert webhook["clientConfig"]["service"]["path"] == "/mutate-pod"
    assert webhook["objectSelector"] == {"matchLabels": {"tensor-fusion.ai/enabled": "true"}}
    assert webhook["failurePolicy"] == "Fail"
    progressive = _documents({"scheduler": {"progressiveMigration": True}})
    hook = next(
        d
        for d in progressive["gpupool/templates/scheduler-webhook.yaml"]
        if d["kind"] == "MutatingWebhookConfiguration"
    )
    assert "objectSelector" not in hook["webhooks"][0]
    deployment = progressive["gpupool/templates/scheduler-deployment.yaml"][0]
    relay = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "--progressive-migration" in relay["args"]
