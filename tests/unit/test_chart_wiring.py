"""The chart installs as shipped: every manifest validates for every Kubernetes minor version in
Chart.yaml's kubeVersion range (defaults and values-production.yaml), and its wiring matches the
code — extender URL and verbs ↔ the relay's routes, webhook Service ↔ port, probes ↔ listeners,
RBAC ↔ the call lists kept beside the relay and the adapters (both ways), and ↔ the roles
docs/kube-access.md prints for a cluster without the chart, kube-scheduler's Lease
under its real name, TLS consistent within a render, the default kube-scheduler image inside the
version-skew rule, values.schema.json refusing bad values, and values-production.yaml.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml
from starlette.routing import Route

from gpupool.adapters.kube.calls import FUNCTION_CLUSTER_CALLS, FUNCTION_NAMESPACE_CALLS
from gpupool_incluster.relay.access import VIEWER_RULES
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.kube_calls import RELAY_CLUSTER_CALLS, RELAY_NAMESPACE_CALLS
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.serve import RelayOptions

CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"
PRODUCTION = yaml.safe_load((CHART / "values-production.yaml").read_text())


def _minors_in_range() -> tuple[str, ...]:
    """Each minor Chart.yaml's `>=1.A.0-0 <1.B.0-0` admits, as 1.X.0 (read here, not by the chart)."""
    constraint = yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"]
    found = re.fullmatch(r">=1\.(\d+)\.0-0 <1\.(\d+)\.0-0", constraint)
    assert found, f"Chart.yaml kubeVersion {constraint!r} is not of the form this test reads"
    return tuple(f"1.{minor}.0" for minor in range(int(found.group(1)), int(found.group(2))))


VERSIONS = _minors_in_range()
NOT_IN_KUBERNETES = {"Certificate", "Issuer"}  # cert-manager's kinds


def _render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values or {}, name="gp", namespace="gpupool-system")
    return [d for text in rendered.values() for d in yaml.safe_load_all(text) if d]


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def _container(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    pod = _one(docs, "Deployment", "gp-scheduler")["spec"]["template"]["spec"]
    (found,) = [c for c in pod["containers"] if c["name"] == name]
    return found


def _arg(container: dict[str, Any], flag: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in container["args"] if a.startswith(flag + "=")]
    return value


def _paths(surfaces: set[str]) -> set[str]:
    app = create_app(SchedulerHub(writer=None), surfaces=surfaces, metrics=RelayMetrics())  # type: ignore[arg-type]
    return {r.path for r in app.routes if isinstance(r, Route)}


def _grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("overlay", ["defaults", "production"])
def test_every_manifest_validates_and_the_chart_lints(version: str, overlay: str) -> None:
    values: dict[str, Any] = (
        json.loads(json.dumps(PRODUCTION)) if overlay == "production" else {"scheduler": {}}
    )
    values["scheduler"]["kubeVersion"] = version
    docs = _render(values)
    for doc in docs:
        if doc["kind"] not in NOT_IN_KUBERNETES:
            kubernetes_validate.validate(doc, version, strict=True)
    result = helm.lint(str(CHART), values or None, strict=True, kube_version=version)
    assert result["errors"] == [] and [m for m in result["messages"] if m["severity"] >= 2] == []


def test_the_extender_is_on_loopback_with_the_relays_verbs_and_the_service_serves_none_of_it() -> None:
    docs = _render()
    config = yaml.safe_load(_one(docs, "ConfigMap", "gp-scheduler-config")["data"]["scheduler-config.yaml"])
    (extender,) = config["extenders"]
    relay = _container(docs, "relay")
    assert extender["urlPrefix"] == f"http://{_arg(relay, '--extender-listen')}/scheduler"
    assert _arg(relay, "--extender-listen").startswith("127.0.0.1:") and extender["enableHTTPS"] is False
    verbs = {f"/scheduler/{extender[k]}" for k in ("filterVerb", "prioritizeVerb", "bindVerb")}
    assert verbs == _paths({"extender"})
    public = _paths({"webhook", "health"})
    assert not any(p.startswith("/scheduler") for p in public)
    assert _arg(relay, "--api-access") == "none"


def test_the_webhook_reaches_the_relays_service_port_and_route() -> None:
    docs = _render()
    hook = _one(docs, "MutatingWebhookConfiguration", "gp-pod-webhook")["webhooks"][0]["clientConfig"]
    service = _one(docs, "Service", hook["service"]["name"])
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == hook["service"]["port"]]
    relay = _container(docs, "relay")
    (container_port,) = [p for p in relay["ports"] if p["name"] == port["targetPort"]]
    assert _arg(relay, "--listen").endswith(f":{container_port['containerPort']}")
    assert hook["service"]["path"] in _paths({"webhook"})


def test_probes_on_both_containers_match_the_listeners() -> None:
    docs = _render()
    relay, scheduler = _container(docs, "relay"), _container(docs, "kube-scheduler")
    (metrics_port,) = [p["containerPort"] for p in relay["ports"] if p["name"] == "metrics"]
    assert _arg(relay, "--metrics-listen").endswith(f":{metrics_port}")
    served = _paths({"metrics", "health"})
    assert relay["livenessProbe"]["httpGet"]["path"] == "/healthz" in served
    assert relay["readinessProbe"]["httpGet"]["path"] == "/readyz" in served
    assert scheduler["livenessProbe"]["httpGet"]["port"] == 10259 and scheduler["readinessProbe"]
    assert relay["resources"]["limits"] and scheduler["resources"]["limits"]


def test_rbac_grants_exactly_the_calls_the_code_lists() -> None:
    docs = _render()
    assert _grants(_one(docs, "ClusterRole", "gp-scheduler-relay")) == RELAY_CLUSTER_CALLS
    leases = _one(docs, "Role", "gp-scheduler-leases")
    assert _grants(leases) == RELAY_NAMESPACE_CALLS
    named = next(r for r in leases["rules"] if r.get("resourceNames"))
    relay_lease = RelayOptions.__dataclass_fields__["lease_name"].default
    assert named["resourceNames"] == [relay_lease] and set(named["verbs"]) == {"get", "update"}
    theirs = next(
        r for r in _one(docs, "Role", "gp-kube-scheduler-leases")["rules"] if r.get("resourceNames")
    )
    config = yaml.safe_load(_one(docs, "ConfigMap", "gp-scheduler-config")["data"]["scheduler-config.yaml"])
    assert theirs["resourceNames"] == [config["leaderElection"]["resourceName"]]  # kube-scheduler's own Lease
    bound = {
        (d["roleRef"]["name"], s["name"])
        for d in docs
        if d["kind"] in ("ClusterRoleBinding", "RoleBinding")
        for s in d["subjects"]
        if s["kind"] == "ServiceAccount" and s["name"] in ("gp-scheduler", "gp-kube-scheduler")
    }
    assert bound == {
        ("gp-scheduler-relay", "gp-scheduler"),
        ("gp-scheduler-leases", "gp-scheduler"),
        ("system:kube-scheduler", "gp-kube-scheduler"),
        ("system:volume-scheduler", "gp-kube-scheduler"),
        ("extension-apiserver-authentication-reader", "gp-kube-scheduler"),
        ("gp-kube-scheduler-leases", "gp-kube-scheduler"),
    }  # the relay holds none of kube-scheduler's roles, kube-scheduler none of the relay's
    assert _grants(_one(docs, "ClusterRole", "gp-functions")) == FUNCTION_CLUSTER_CALLS
    assert _grants(_one(docs, "Role", "gp-functions-leases")) == FUNCTION_NAMESPACE_CALLS
    binding = _one(docs, "ClusterRoleBinding", "gp-functions")
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpupool"}
    ]
    viewer = _one(docs, "ClusterRole", "gp-gpupool-viewer")
    assert {(u, v) for r in viewer["rules"] for u in r["nonResourceURLs"] for v in r["verbs"]} == set(
        VIEWER_RULES
    )
    assert not [
        d for d in _render({"functionsRbac": {"enabled": False}}) if d["metadata"]["name"] == "gp-functions"
    ]


def test_each_container_calls_the_api_server_as_itself() -> None:
    docs = _render()
    pod = _one(docs, "Deployment", "gp-scheduler")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "gp-scheduler" and pod["automountServiceAccountToken"] is False
    volumes = {v["name"]: v for v in pod["volumes"]}
    in_cluster = "/var/run/secrets/kubernetes.io/serviceaccount"
    mounted = {
        c["name"]: {m["name"] for m in c["volumeMounts"] if m["mountPath"] == in_cluster}
        for c in pod["containers"]
    }
    assert mounted == {"relay": {"relay-token"}, "kube-scheduler": {"kube-scheduler-token"}}
    sources = volumes["relay-token"]["projected"]["sources"]
    token = next(s["serviceAccountToken"] for s in sources if "serviceAccountToken" in s)
    assert "audience" not in token  # the API server's own audience, as automounting gives
    secret = _one(docs, "Secret", volumes["kube-scheduler-token"]["secret"]["secretName"])
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == "gp-kube-scheduler"
    for name in ("relay", "kube-scheduler"):  # neither sees the other's token
        others = {m["name"] for m in _container(docs, name)["volumeMounts"]}
        assert not others & ({"relay-token", "kube-scheduler-token"} - mounted[name])


def test_the_functions_roles_in_the_docs_are_the_charts() -> None:
    text = (CHART.parents[1] / "docs" / "kube-access.md").read_text(encoding="utf-8")
    block = text.split("## RBAC the functions need", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    documented = list(yaml.safe_load_all(block))
    rendered = _render({"karpenter": {"rbac": {"enabled": True}}})
    charted = _grants(_one(rendered, "ClusterRole", "gp-functions")) | _grants(
        _one(rendered, "ClusterRole", "gp-functions-karpenter")
    )
    assert _grants(next(d for d in documented if d["kind"] == "ClusterRole")) == charted
    assert _grants(next(d for d in documented if d["kind"] == "Role")) == FUNCTION_NAMESPACE_CALLS


def test_tls_is_one_pair_per_render_and_the_pods_roll_when_it_changes() -> None:
    docs = _render()
    secret = _one(docs, "Secret", "gp-scheduler-tls")["data"]
    hook = _one(docs, "MutatingWebhookConfiguration", "gp-pod-webhook")["webhooks"][0]
    assert hook["clientConfig"]["caBundle"] == secret["ca.crt"]
    pod = _one(docs, "Deployment", "gp-scheduler")["spec"]["template"]
    again = _one(_render(), "Deployment", "gp-scheduler")["spec"]["template"]
    assert pod["metadata"]["annotations"]["checksum/tls"] != again["metadata"]["annotations"]["checksum/tls"]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "tls"]
    assert volume["secret"]["secretName"] == "gp-scheduler-tls"
    given = {"crt": "C", "key": "K", "ca": "A"}
    pinned = _render({"scheduler": {"tls": given}})
    stamp = _one(pinned, "Deployment", "gp-scheduler")["spec"]["template"]["metadata"]["annotations"]
    assert (
        stamp["checksum/tls"]
        == hashlib.sha256(json.dumps(given, separators=(",", ":"), sort_keys=True).encode()).hexdigest()
    )


def test_cert_manager_issues_the_secret_and_injects_the_ca() -> None:
    docs = _render({"scheduler": {"certManager": {"enabled": True}}})
    certificate = _one(docs, "Certificate", "gp-scheduler")
    assert certificate["spec"]["secretName"] == "gp-scheduler-tls"
    assert "gp-scheduler.gpupool-system.svc" in certificate["spec"]["dnsNames"]
    tls = [d for d in docs if d["kind"] == "Secret" and d["type"] == "kubernetes.io/tls"]
    assert not tls  # cert-manager makes it
    hook = _one(docs, "MutatingWebhookConfiguration", "gp-pod-webhook")
    assert hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "gpupool-system/gp-scheduler"
    assert "caBundle" not in hook["webhooks"][0]["clientConfig"]


@pytest.mark.parametrize("minor", [v.rsplit(".", 1)[0] for v in VERSIONS])
def test_the_default_kube_scheduler_follows_the_clusters_version(minor: str) -> None:
    version = f"{minor}.4"
    image = _container(_render({"scheduler": {"kubeVersion": f"v{version}-eks-2d5f260"}}), "kube-scheduler")[
        "image"
    ]
    assert image == f"registry.k8s.io/kube-scheduler:v{version}"  # same minor: inside the skew rule
    pinned = _render({"scheduler": {"kubeSchedulerImage": "mirror/kube-scheduler:v1.31.4"}})
    assert _container(pinned, "kube-scheduler")["image"] == "mirror/kube-scheduler:v1.31.4"


def test_forwarder_values_become_flags_mounts_and_annotations() -> None:
    values = {
        "scheduler": {
            "forward": {"urls": {"launch": "https://l.lambda-url.eu-west-1.on.aws/", "bind": "https://b/"},
                        "auth": "hmac", "hmacSecret": "s3cret", "region": "eu-west-1"},
            "serviceAccountAnnotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/relay"},
        }
    }  # fmt: skip
    docs = _render(values)
    relay = _container(docs, "relay")
    assert "--forward=launch=https://l.lambda-url.eu-west-1.on.aws/" in relay["args"]
    assert "--forward=bind=https://b/" in relay["args"] and _arg(relay, "--forward-auth") == "hmac"
    assert _arg(relay, "--hmac-secret-file") == "/etc/gpupool/hmac/secret"
    secret = _one(docs, "Secret", "gp-relay-hmac")
    assert secret["data"]["secret"] == "czNjcmV0"
    account = _one(docs, "ServiceAccount", "gp-scheduler")
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/relay")
    fc = _container(
        _render({"scheduler": {"forward": {"urls": {"bind": "https://fc/"}, "auth": "fc"}}}), "relay"
    )
    assert _arg(fc, "--fc-credentials-dir") == "/etc/gpupool/alibaba"
    assert not any(a.startswith("--forward") for a in _container(_render(), "relay")["args"])


@pytest.mark.parametrize(
    "bad",
    [
        {"scheduler": {"forward": {"auth": "basic"}}},
        {"scheduler": {"forward": {"urls": {"scale": "https://x/"}}}},
        {"scheduler": {"forward": {"urls": {"bind": "ftp://x/"}}}},
        {"scheduler": {"apiAccess": "open"}},
        {"scheduler": {"replicas": 0}},
        {"scheduler": {"relayPorts": 1}},
    ],
)
def test_the_schema_refuses_bad_values(bad: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        _render(bad)


def test_hmac_without_a_secret_is_refused_at_render_time() -> None:
    with pytest.raises(helm.HelmError, match="hmacSecret"):
        _render({"scheduler": {"forward": {"urls": {"bind": "https://b/"}, "auth": "hmac"}}})


def test_production_overlay_follows_the_guide() -> None:
    docs = _render(PRODUCTION)
    deployment = _one(docs, "Deployment", "gp-scheduler")
    assert deployment["spec"]["replicas"] == 2
    affinity = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert (
        affinity["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"]
        == "kubernetes.io/hostname"
    )
    relay = _container(docs, "relay")
    assert relay["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "4", "memory": "4Gi"},
    }
    assert _one(docs, "PodDisruptionBudget", "gp-scheduler")["spec"]["minAvailable"] == 1
    assert _arg(relay, "--api-access") == "token"
    default = _one(_render(), "Deployment", "gp-scheduler")["spec"]["template"]["spec"]["affinity"]
    assert "preferredDuringSchedulingIgnoredDuringExecution" in default["podAntiAffinity"]
