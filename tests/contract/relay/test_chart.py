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


def test_webhook_selects_enabled_pods_and_progressive_migration_adds_a_second_for_the_rest() -> None:
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
    tf_hook, native_hook = hook["webhooks"]
    assert tf_hook["objectSelector"] == webhook["objectSelector"] and tf_hook["failurePolicy"] == "Fail"
    assert native_hook["objectSelector"] == {
        "matchExpressions": [{"key": "tensor-fusion.ai/enabled", "operator": "NotIn", "values": ["true"]}]
    }
    deployment = progressive["gpupool/templates/scheduler-deployment.yaml"][0]
    relay = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "--progressive-migration" in relay["args"]


def test_a_relay_outage_blocks_no_pod_outside_tensorfusion_and_system_namespaces_are_never_sent() -> None:
    """Issue 22, Why 9: with progressiveMigration on, the catch-all webhook used to Fail for every pod."""
    progressive = _documents({"scheduler": {"progressiveMigration": True}})
    config = next(
        d
        for d in progressive["gpupool/templates/scheduler-webhook.yaml"]
        if d["kind"] == "MutatingWebhookConfiguration"
    )
    policies = {hook["name"]: hook["failurePolicy"] for hook in config["webhooks"]}
    assert policies == {
        "pods.gpupool.tensor-fusion.ai": "Fail",
        "native-pods.gpupool.tensor-fusion.ai": "Ignore",
    }
    for hook in config["webhooks"]:
        (expression,) = hook["namespaceSelector"]["matchExpressions"]
        assert (expression["key"], expression["operator"]) == ("kubernetes.io/metadata.name", "NotIn")
        assert {"kube-system", "cert-manager", "gpu-operator", "gpupool-system"} <= set(expression["values"])
    narrowed = _documents({"scheduler": {"webhookExcludedNamespaces": ["ops"]}})
    hook = next(
        d
        for d in narrowed["gpupool/templates/scheduler-webhook.yaml"]
        if d["kind"] == "MutatingWebhookConfiguration"
    )["webhooks"][0]
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["ops", "gpupool-system"]


def test_every_scheduling_container_runs_non_root_read_only_with_seccomp() -> None:
    """Issue 22, Why 10: no seccomp profile, and kube-scheduler ran without runAsNonRoot / read-only root."""
    deployment = _documents({})["gpupool/templates/scheduler-deployment.yaml"][0]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["runAsNonRoot"] is True, container["name"]
        assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
    scheduler = next(c for c in pod["containers"] if c["name"] == "kube-scheduler")
    assert scheduler["securityContext"]["runAsUser"] != 0
