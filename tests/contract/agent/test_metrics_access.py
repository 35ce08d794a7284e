"""Who may read the node agent's /metrics, whose per-worker series name namespaces and pods (issue 22,
Deliver 7: "metrics that name pods not on an open port").

Against the embedded API server's TokenReview and SubjectAccessReview (`gpupool.sandbox.kubeapi.reviews`,
kube-apiserver's rules), with the chart's rendered `<release>-agent-metrics-reader` ClusterRole and the
binding `agent.metricsReaders` renders loaded as the RBAC. Covers: a scrape without a token, with a
Basic credential or with a token the API server does not know → 401; a token whose user RBAC does not
allow `get /metrics` → 403; Prometheus's service-account token, bound by the chart → 200 with the
per-worker series; with `agent.metricsAudiences` set, Prometheus's API-server token → 401 and one made
for that audience → 200; `/healthz` without a token; an API server that cannot be reached → 503 with
nothing of the registry; no refusal logs the token; the chart renders the reader role, its binding,
the agent's review rights and `--metrics-auth`, and refuses an unknown mode; `gpupool agent run`
guards /metrics by default (a real process).
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import httpx
import pytest
import yaml
from kubernetes import client, config

from gpupool.adapters.kube.token_access import TokenAccess
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.sandbox.kubeapi.reviews import book_of
from gpupool_incluster.agent.metrics import AgentMetrics

sys.path.insert(0, str(Path(__file__).parent))
from agent_builders import wait_for, write_fake_nvml

CHART = Path(__file__).resolve().parents[3] / "incluster" / "chart"
PROMETHEUS = {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
PROMETHEUS_USER = "system:serviceaccount:monitoring:prometheus"
WORKER_SERIES = (
    'tf_worker_usage_memory_bytes{namespace="team-a",node="node-a",uuid="GPU-0",worker="trainer-0"}'
)


def _chart(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return [
        d for path, text in rendered.items() if "/templates/" in path for d in yaml.safe_load_all(text) if d
    ]


def _named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


@pytest.fixture
def sandbox() -> Iterator[tuple[EmbeddedKubeAPI, Any]]:
    """The API server, its RBAC loaded from the chart rendered with Prometheus as a metrics reader."""
    with EmbeddedKubeAPI() as api:
        objects = _chart({"agent": {"metricsReaders": [PROMETHEUS]}})
        role = _named(objects, "ClusterRole", "gp-agent-metrics-reader")
        binding = _named(objects, "ClusterRoleBinding", "gp-agent-metrics-reader")
        book = book_of(api.cluster)
        book.bind(binding["subjects"], role["rules"])
        book.add_token("prometheus-token", PROMETHEUS_USER, ["system:serviceaccounts"])
        book.add_token("prometheus-agent-token", PROMETHEUS_USER, audiences=["gpupool-agent"])
        book.add_token("dave-token", "dave", ["developers"])  # known, but granted nothing
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        try:
            yield api, api_client
        finally:
            api_client.close()


def _metrics() -> AgentMetrics:
    metrics = AgentMetrics()
    labels = {"node": "node-a", "namespace": "team-a", "worker": "trainer-0", "uuid": "GPU-0"}
    metrics.worker_memory.labels(**labels).set(4096)
    return metrics


def _scrape(
    port: int, token: str | None = None, *, scheme: str = "Bearer", path: str = "/metrics"
) -> httpx.Response:
    headers = {"Authorization": f"{scheme} {token}"} if token is not None else {}
    return httpx.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=10)


def test_only_a_token_rbac_allows_to_get_metrics_reads_the_per_worker_series(
    sandbox: tuple[EmbeddedKubeAPI, Any], caplog: pytest.LogCaptureFixture
) -> None:
    _, api_client = sandbox
    port = _metrics().serve("127.0.0.1", 0, access=TokenAccess(api_client, audiences=None))
    with caplog.at_level(logging.DEBUG):
        refusals = {
            "no token": (_scrape(port), 401),
            "a Basic credential": (_scrape(port, "cHJvbTpwYXNz", scheme="Basic"), 401),
            "a token the API server does not know": (_scrape(port, "forged-token"), 401),
            "a token RBAC grants nothing": (_scrape(port, "dave-token"), 403),
            "a token for another audience only": (_scrape(port, "prometheus-agent-token"), 401),
        }
    for case, (answer, status) in refusals.items():
        assert answer.status_code == status, case
        assert "tf_worker" not in answer.text and "team-a" not in answer.text, case
    assert refusals["a token RBAC grants nothing"][0].text == "dave may not get /metrics\n"
    assert "forged-token" not in caplog.text and "dave-token" not in caplog.text
    allowed = _scrape(port, "prometheus-token")
    assert allowed.status_code == 200 and allowed.headers["content-type"].startswith("text/plain; version=")
    assert f"{WORKER_SERIES} 4096.0" in allowed.text
    health = _scrape(port, path="/healthz")
    assert health.status_code == 200 and health.text == "ok\n"
    assert _scrape(port, "prometheus-token", path="/").status_code == 404
    assert httpx.post(f"http://127.0.0.1:{port}/metrics").status_code == 405


def test_a_dedicated_audience_refuses_prometheuss_api_server_token(
    sandbox: tuple[EmbeddedKubeAPI, Any],
) -> None:
    _, api_client = sandbox
    access = TokenAccess(api_client, audiences=("gpupool-agent",))
    port = _metrics().serve("127.0.0.1", 0, access=access)
    assert _scrape(port, "prometheus-token").status_code == 401  # good for the API server, not for us
    answer = _scrape(port, "prometheus-agent-token")
    assert answer.status_code == 200 and WORKER_SERIES in answer.text


def test_an_api_server_that_cannot_review_the_token_is_a_503_with_nothing_of_the_registry() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    gone = client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{closed}"))
    gone.configuration.retries = 0
    port = _metrics().serve("127.0.0.1", 0, access=TokenAccess(gone, audiences=None, timeout=2))
    answer = _scrape(port, "prometheus-token")
    assert answer.status_code == 503 and "tf_worker" not in answer.text


def test_the_chart_renders_the_reader_role_its_binding_and_the_agents_review_rights() -> None:
    objects = _chart({})
    role = _named(objects, "ClusterRole", "gp-agent-metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert not [
        o for o in objects if o["kind"] == "ClusterRoleBinding" and "metrics-reader" in o["metadata"]["name"]
    ]
    agent_rules = _named(objects, "ClusterRole", "gp-agent")["rules"]
    assert {
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["tokenreviews"],
        "verbs": ["create"],
    } in agent_rules
    assert {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    } in agent_rules
    daemonset = _named(objects, "DaemonSet", "gp-agent")
    args = daemonset["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--metrics-auth=token" in args and not [a for a in args if a.startswith("--metrics-audience")]
    binding = _named(
        _chart({"agent": {"metricsReaders": [PROMETHEUS]}}), "ClusterRoleBinding", "gp-agent-metrics-reader"
    )
    assert binding["subjects"] == [PROMETHEUS] and binding["roleRef"]["name"] == "gp-agent-metrics-reader"
    audience = _named(_chart({"agent": {"metricsAudiences": ["gpupool-agent"]}}), "DaemonSet", "gp-agent")
    assert "--metrics-audience=gpupool-agent" in audience["spec"]["template"]["spec"]["containers"][0]["args"]
    open_ = _chart({"agent": {"metricsAuth": "none"}})
    assert (
        "--metrics-auth=none"
        in _named(open_, "DaemonSet", "gp-agent")["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    assert not [o for o in open_ if "metrics-reader" in o["metadata"]["name"]]
    assert not [
        r for r in _named(open_, "ClusterRole", "gp-agent")["rules"] if "tokenreviews" in r["resources"]
    ]
    with pytest.raises(helm.HelmError, match=r"agent\.metricsAuth must be token or none"):
        _chart({"agent": {"metricsAuth": "open"}})


@pytest.mark.slow
def test_gpupool_agent_run_guards_metrics_by_default(
    sandbox: tuple[EmbeddedKubeAPI, Any], tmp_path: Path
) -> None:
    api, _ = sandbox
    write_fake_nvml(tmp_path / "nvml.json")
    (tmp_path / "proc").mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable, "-m", "gpupool.cli.main", "agent", "run", "--node", "node-a",
        "--kubeconfig", str(api.kubeconfig_path), "--nvml", f"fake:{tmp_path / 'nvml.json'}",
        "--proc-root", str(tmp_path / "proc"), "--metrics", f"127.0.0.1:{port}", "--device-plugin-dir", "off",
    ]  # fmt: skip
    log = (tmp_path / "agent.log").open("wb")
    agent = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:

        def healthy() -> bool:
            try:
                return _scrape(port, path="/healthz").status_code == 200
            except httpx.TransportError:
                return False

        wait_for(healthy, "the agent's /healthz", timeout=60)
        assert _scrape(port).status_code == 401
        assert _scrape(port, "dave-token").status_code == 403
        answer = _scrape(port, "prometheus-token")
        assert answer.status_code == 200 and "tf_gpu_usable" in answer.text
    finally:
        agent.terminate()
        agent.wait(20)
        log.close()
