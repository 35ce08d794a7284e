"""The chart's scheduler templates render offline and wire the extender and the webhook as documented;
its NetworkPolicy, read with NetworkPolicy's own rules, lets only the API server reach the webhook
port and refuses to render without the API server's source."""

from __future__ import annotations

import ipaddress
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


# ---- the NetworkPolicy: who may reach the scheduling pods --------------------------------------
EKS_CONTROL_PLANE = [{"ipBlock": {"cidr": "10.0.0.0/28"}}, {"ipBlock": {"cidr": "10.0.0.16/28"}}]


def _policy(values: dict[str, Any]) -> dict[str, Any]:
    [policy] = _documents(values)["gpupool/templates/scheduler-networkpolicy.yaml"]
    return policy


def _peer_admits(peer: dict[str, Any], source: dict[str, Any]) -> bool:
    """networking.k8s.io/v1 NetworkPolicyPeer semantics for one source: an address (`ip`) or a pod
    (`ip`, `namespace` labels, `pod` labels). An ipBlock matches the address (cidr minus except); a
    namespaceSelector and / or podSelector match pods (both given: both must match; podSelector
    alone: the policy's own namespace). Only matchLabels selectors are used by this chart's values."""
    if "ipBlock" in peer:
        address = ipaddress.ip_address(source["ip"])
        block = peer["ipBlock"]
        return address in ipaddress.ip_network(block["cidr"]) and not any(
            address in ipaddress.ip_network(c) for c in block.get("except", [])
        )
    if "pod" not in source:
        return False
    namespaces = peer.get("namespaceSelector")
    pods = peer.get("podSelector")
    if namespaces is None and source["namespace"].get("kubernetes.io/metadata.name") != "gpupool-system":
        return False

    def matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
        wanted = (selector or {}).get("matchLabels") or {}
        return all(labels.get(k) == v for k, v in wanted.items())

    return matches(namespaces, source["namespace"]) and matches(pods, source["pod"])


def _admits(policy: dict[str, Any], port: int, source: dict[str, Any]) -> bool:
    """Whether any ingress rule lets `source` reach `port` (a rule without `from` admits anyone)."""
    return any(
        any(p["port"] == port and p.get("protocol", "TCP") == "TCP" for p in rule.get("ports") or [])
        and ("from" not in rule or any(_peer_admits(peer, source) for peer in rule["from"]))
        for rule in policy["spec"]["ingress"]
    )


API_SERVER = {"ip": "10.0.0.5"}  # an EKS control-plane ENI in the cluster's first subnet
TENANT_POD = {"ip": "10.0.64.7", "namespace": {"kubernetes.io/metadata.name": "team"}, "pod": {"app": "x"}}
PROMETHEUS = {
    "ip": "10.0.70.2",
    "namespace": {"kubernetes.io/metadata.name": "monitoring"},
    "pod": {"app.kubernetes.io/name": "prometheus"},
}


def test_no_network_policy_unless_enabled_and_none_without_the_api_servers_source() -> None:
    assert not _documents({}).get("gpupool/templates/scheduler-networkpolicy.yaml")
    with pytest.raises(helm.HelmError, match=r"scheduler.networkPolicy.apiServer is empty"):
        _documents({"scheduler": {"networkPolicy": {"enabled": True}}})


def test_only_the_api_server_reaches_the_webhook_port() -> None:
    values = {
        "scheduler": {"relayPort": 9443, "networkPolicy": {"enabled": True, "apiServer": EKS_CONTROL_PLANE}}
    }
    policy = _policy(values)
    deployment = _documents(values)["gpupool/templates/scheduler-deployment.yaml"]
    pod_template = deployment[0]["spec"]["template"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_template["metadata"]["labels"].items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    relay = next(c for c in pod_template["spec"]["containers"] if c["name"] == "relay")
    webhook_port = next(p["containerPort"] for p in relay["ports"] if p["name"] == "https")
    assert webhook_port == 9443
    assert _admits(policy, webhook_port, API_SERVER)
    assert _admits(policy, webhook_port, {"ip": "10.0.0.20"})  # the second control-plane subnet
    assert not _admits(policy, webhook_port, TENANT_POD)  # a pod forging reviews
    assert not _admits(policy, webhook_port, {"ip": "10.0.0.40"})  # the node subnet
    assert not _admits(policy, 8444, API_SERVER) and not _admits(policy, 10259, TENANT_POD)  # nothing else


def test_the_metrics_port_is_open_unless_metrics_from_narrows_it() -> None:
    base = {"enabled": True, "apiServer": EKS_CONTROL_PLANE}
    open_policy = _policy({"scheduler": {"networkPolicy": base}})
    assert _admits(open_policy, 9090, TENANT_POD) and _admits(open_policy, 9090, PROMETHEUS)
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    narrowed = _policy({"scheduler": {"networkPolicy": base | {"metricsFrom": [monitoring]}}})
    assert _admits(narrowed, 9090, PROMETHEUS) and not _admits(narrowed, 9090, TENANT_POD)
    assert not _admits(narrowed, 8443, PROMETHEUS)


@pytest.mark.parametrize(
    "peer",
    [
        {"ipBlock": {}},
        {"ipBlock": {"cidr": "10.0.0.0/28"}, "podSelector": {}},
        {},
        {"serviceAccount": "x"},
    ],
    ids=["no-cidr", "ipblock-and-selector", "empty", "unknown-field"],
)
def test_the_schema_refuses_a_peer_kubernetes_would_refuse(peer: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        _documents({"scheduler": {"networkPolicy": {"enabled": True, "apiServer": [peer]}}})


def test_the_relay_is_told_the_audience_its_api_tokens_must_carry() -> None:
    cases = [({}, "gpupool-relay"), ({"scheduler": {"apiAudience": "relay.example"}}, "relay.example")]
    for values, audience in cases:
        deployment = _documents(values)["gpupool/templates/scheduler-deployment.yaml"][0]
        relay = deployment["spec"]["template"]["spec"]["containers"][0]
        assert f"--api-audience={audience}" in relay["args"]


@pytest.mark.parametrize("auth", ["sigv4", "fc", "hmac"])
def test_the_region_reaches_the_relay_only_for_sigv4(auth: str) -> None:
    """The relay refuses `--region` with `--forward-auth fc|hmac` (it signs nothing with it), so a
    values file that sets `forward.region` for every cloud must still start the relay."""
    forward = {
        "urls": {"bind": "https://bind.example/"},
        "auth": auth,
        "region": "us-east-1",
        "hmacSecret": "s3cret",
    }
    deployment = _documents({"scheduler": {"forward": forward}})[
        "gpupool/templates/scheduler-deployment.yaml"
    ][0]
    relay = deployment["spec"]["template"]["spec"]["containers"][0]
    assert ("--region=us-east-1" in relay["args"]) == (auth == "sigv4")
