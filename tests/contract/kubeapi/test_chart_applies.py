"""The project's own chart applies to its own sandbox: every object `helm template` renders
from incluster/chart (and the chart's CRDs, as `helm install` applies them) goes in with
kubectl `apply -f`, reads back equal to what was applied (the server adds only
defaults), and a second apply writes nothing.

Rendered with helm-python-sdk (the real Helm library, offline); kubectl as in
test_kubectl_130.py; the same objects also go in by server-side apply over raw HTTP (the second
test).
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from kubeapi_builders import http_call
from test_kubectl_130 import KUBECTL

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI

CHART = Path(__file__).resolve().parents[3] / "incluster" / "chart"
NAMESPACE = "gpupool-system"
APPLY = "application/apply-patch+yaml"


def _documents() -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render({}, name="gp", namespace=NAMESPACE)
    documents = [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]
    for crd in sorted((CHART / "crds").glob("*.yaml")):
        documents += [doc for doc in yaml.safe_load_all(crd.read_text()) if doc]
    return documents


def _contained(applied: Any, live: Any, where: str = "") -> list[str]:
    """Where `live` differs from `applied` (fields only `live` has are defaults: allowed)."""
    if isinstance(applied, dict):
        if not isinstance(live, dict):
            return [where]
        return [
            d for key, value in applied.items() for d in _contained(value, live.get(key), f"{where}.{key}")
        ]
    if isinstance(applied, list):
        if not isinstance(live, list) or len(live) != len(applied):
            return [where]
        return [
            d
            for i, (a, b) in enumerate(zip(applied, live, strict=True))
            for d in _contained(a, b, f"{where}[{i}]")
        ]
    return [] if applied == live else [where]


def _path(api: EmbeddedKubeAPI, doc: dict[str, Any]) -> str:
    group, _, version = str(doc["apiVersion"]).rpartition("/")
    found = next(rt for rt in api.cluster.registry.resources(group, version) if rt.kind == doc["kind"])
    scope = f"/namespaces/{doc['metadata'].get('namespace', NAMESPACE)}" if found.namespaced else ""
    return f"{found.group_path}{scope}/{found.plural}/{doc['metadata']['name']}"


def _expected(doc: dict[str, Any]) -> dict[str, Any]:
    """What reading `doc` back must show: a Secret's stringData arrives as base64 data."""
    if doc["kind"] != "Secret" or "stringData" not in doc:
        return doc
    data = dict(doc.get("data") or {})
    data.update({k: base64.b64encode(str(v).encode()).decode() for k, v in doc["stringData"].items()})
    return {**{k: v for k, v in doc.items() if k != "stringData"}, "data": data}


@pytest.mark.usefixtures("needs_kubectl")
def test_every_chart_object_applies_and_reads_back(kube_api: EmbeddedKubeAPI, tmp_path: Path) -> None:
    assert KUBECTL is not None
    documents = _documents()
    assert {"Deployment", "Service", "ServiceAccount", "ClusterRole", "MutatingWebhookConfiguration"} <= {
        doc["kind"] for doc in documents
    }
    manifest = tmp_path / "chart.yaml"
    manifest.write_text(yaml.safe_dump_all(documents))
    env = {"KUBECONFIG": str(kube_api.kubeconfig_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        return subprocess.run(
            [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )

    assert kubectl("create", "namespace", NAMESPACE).returncode == 0
    first = kubectl("apply", "-f", str(manifest))
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.splitlines()) == len(documents)
    versions = {}
    for doc in documents:
        status, live, _ = http_call(kube_api.port, "GET", _path(kube_api, doc))
        assert status == 200, (doc["kind"], doc["metadata"]["name"])
        differences = _contained(_expected(doc), live)
        assert differences == [], (doc["kind"], doc["metadata"]["name"], differences)
        versions[_path(kube_api, doc)] = live["metadata"]["resourceVersion"]
    # kubectl may still say "configured" where an atomic list holds defaulted items (webhook
    # rules' scope), as against a real server; the server must write nothing.
    again = kubectl("apply", "-f", str(manifest))
    assert again.returncode == 0, again.stderr
    after = {
        path: http_call(kube_api.port, "GET", path)[1]["metadata"]["resourceVersion"] for path in versions
    }
    assert after == versions


def test_every_chart_object_server_side_applies_and_reads_back(kube_api: EmbeddedKubeAPI) -> None:
    documents = _documents()
    http_call(kube_api.port, "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    versions = {}
    for doc in documents:
        path = _path(kube_api, doc)
        body = yaml.safe_dump(doc).encode()
        query = "?fieldManager=helm&force=true"
        status, live, _ = http_call(kube_api.port, "PATCH", path + query, body, content_type=APPLY)
        assert status in (200, 201), (doc["kind"], doc["metadata"]["name"], live)
        assert _contained(_expected(doc), live) == [], (doc["kind"], doc["metadata"]["name"])
        versions[path] = live["metadata"]["resourceVersion"]
    for doc in documents:
        path = _path(kube_api, doc)
        status, live, _ = http_call(
            kube_api.port,
            "PATCH",
            path + "?fieldManager=helm",
            yaml.safe_dump(doc).encode(),
            content_type=APPLY,
        )
        assert (status, live["metadata"]["resourceVersion"]) == (200, versions[path]), doc["metadata"]["name"]
