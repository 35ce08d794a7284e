"""The chart by the real Helm (built from its Go module by `gpupool sandbox build`), not only by the
helm-python-sdk the other chart tests render with: `helm lint --strict` passes with the default
values and with every optional part on, and `helm template` renders every image of every container
kind from values, as test_chart_images.py checks on the SDK's render. A missing helm fails with the
command that builds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.programs import real_tool

sys.path.insert(0, str(Path(__file__).parent))
from test_chart_images import EVERYTHING_ON, REPOSITORY, SCHEDULER, TAG, containers

CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"


@pytest.fixture(scope="module")
def helm() -> Path:
    return real_tool("helm")


def _values(tmp_path: Path) -> Path:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(EVERYTHING_ON))
    return path


@pytest.mark.parametrize("everything", [False, True], ids=["defaults", "everything-on"])
def test_helm_lint_strict_passes(helm: Path, tmp_path: Path, everything: bool) -> None:
    values = ["--values", str(_values(tmp_path))] if everything else []
    done = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART), *values], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_helm_template_takes_every_image_from_values(helm: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(helm),
            "template",
            "gp",
            str(CHART),
            "--namespace",
            "gpupool-system",
            "--values",
            str(_values(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    images = {
        f"{d['kind']}/{d['metadata']['name']}{where}": c["image"] for d in docs for where, c in containers(d)
    }
    assert any(".initContainers[guardian]" in where for where in images)
    assert set(images.values()) == {f"{REPOSITORY}:{TAG}", SCHEDULER}, images


def test_helm_refuses_a_cluster_outside_the_charts_range(helm: Path) -> None:
    done = subprocess.run(
        [str(helm), "template", "gp", str(CHART), "--kube-version", "v1.20.0"], capture_output=True, text=True
    )
    assert done.returncode != 0 and "incompatible with Kubernetes v1.20.0" in done.stderr
