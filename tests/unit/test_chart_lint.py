"""The Helm chart lints cleanly and renders into well-formed Kubernetes objects (helm-python-sdk, offline)."""

from __future__ import annotations

from pathlib import Path

import helm_python as helm
import yaml

from gpupool.core.model.crd import crd_file_name, generate_crds

CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"


def test_chart_lints_without_errors_or_warnings() -> None:
    result = helm.lint(str(CHART), strict=True)
    problems = [m for m in result["messages"] if m["severity"] >= 2]  # 1 info, 2 warning, 3 error
    assert result["errors"] == [] and problems == [], result


def test_chart_renders_well_formed_objects() -> None:
    rendered = helm.Chart.load(CHART).render({}, name="gp", namespace="gpupool-system")
    objects = [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]
    assert objects, "the chart rendered nothing"
    for obj in objects:
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"], obj
    kinds = {obj["kind"] for obj in objects}
    assert {"Deployment", "ConfigMap", "MutatingWebhookConfiguration"} <= kinds


def test_chart_ships_every_generated_crd() -> None:
    shipped = {path.name for path in (CHART / "crds").glob("*.yaml")}
    assert shipped == {crd_file_name(crd) for crd in generate_crds()}
