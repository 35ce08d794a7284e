"""The release path (.github/workflows/release.yml), read statically and, for its version check, run: a
`v*.*.*` tag — and nothing else — tests with .ci/run, then builds incluster/Dockerfile for linux/amd64
and linux/arm64 and pushes it where the chart's default image points (image.repository at the chart's
appVersion), checks both platforms are in the pushed index, and pushes the chart as an OCI artifact;
the check that the tag, pyproject.toml and Chart.yaml name one version passes for this tree's version
and fails for another. Least privilege throughout: read-only by default, packages:write only where it
publishes, no persisted checkout credentials, every action pinned to a commit, no `${{ }}` expression
inside a shell script (values reach scripts through env). ci.yml runs .ci/run on pushes and PRs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE = yaml.safe_load((WORKFLOWS / "release.yml").read_text())
CHART = yaml.safe_load((ROOT / "incluster" / "chart" / "Chart.yaml").read_text())
VALUES = yaml.safe_load((ROOT / "incluster" / "chart" / "values.yaml").read_text())
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def _on(workflow: dict[str, Any]) -> Any:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true


def _steps(job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = RELEASE["jobs"][job]["steps"]
    return steps


def _step(job: str, uses: str) -> dict[str, Any]:
    (found,) = [s for s in _steps(job) if str(s.get("uses", "")).startswith(uses + "@")]
    return found


def _all_workflows() -> list[dict[str, Any]]:
    return [yaml.safe_load(path.read_text()) for path in sorted(WORKFLOWS.glob("*.yml"))]


def test_only_a_version_tag_releases() -> None:
    assert _on(RELEASE) == {"push": {"tags": ["v*.*.*"]}}


def test_it_tests_before_it_publishes_anything() -> None:
    assert RELEASE["jobs"]["publish"]["needs"] == "test"
    assert any(s.get("run") == ".ci/run" for s in _steps("test"))


def test_the_image_is_built_from_the_dockerfile_for_both_platforms_where_the_chart_points() -> None:
    build = _step("publish", "docker/build-push-action")["with"]
    assert (build["context"], build["file"], build["push"]) == (".", "incluster/Dockerfile", True)
    assert build["platforms"] == "${{ env.PLATFORMS }}"
    assert set(RELEASE["env"]["PLATFORMS"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert build["tags"] == "${{ env.IMAGE_REPOSITORY }}:${{ needs.test.outputs.version }}"
    assert RELEASE["env"]["IMAGE_REPOSITORY"] == VALUES["image"]["repository"]
    assert VALUES["image"]["tag"] == "" and CHART["appVersion"] == CHART["version"] == VERSION
    order = [str(s.get("uses", "")).split("@")[0] for s in _steps("publish")]
    assert order.index("docker/setup-qemu-action") < order.index("docker/build-push-action")
    assert _step("publish", "docker/setup-qemu-action")["with"]["platforms"] == "arm64"
    (check,) = [s for s in _steps("publish") if "imagetools inspect" in s.get("run", "")]
    assert "PLATFORMS" in check["run"]


def test_the_chart_is_pushed_as_an_oci_artifact_of_its_own_version() -> None:
    (push,) = [s for s in _steps("publish") if "helm push" in s.get("run", "")]
    script = push["run"]
    assert "helm package incluster/chart --destination dist" in script
    assert 'helm push "dist/gpupool-$VERSION.tgz" "$CHART_REPOSITORY"' in script
    assert RELEASE["env"]["CHART_REPOSITORY"] == "oci://ghcr.io/gpupool/charts" and CHART["name"] == "gpupool"
    assert "--password-stdin" in script and push["env"]["REGISTRY_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"


def _version_check() -> str:
    (check,) = [s for s in _steps("test") if s.get("id") == "version"]
    assert check["env"] == {"TAG": "${{ github.ref_name }}"}
    script: str = check["run"]
    return script


@pytest.mark.parametrize(("tag", "passes"), [(f"v{VERSION}", True), ("v9.9.9", False), (VERSION, False)])
def test_the_version_check_passes_only_for_the_trees_own_version(
    tag: str, passes: bool, tmp_path: Path
) -> None:
    output = tmp_path / "github-output"
    result = subprocess.run(
        ["bash", "-e", "-c", _version_check()],
        cwd=ROOT,
        env={**os.environ, "TAG": tag, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode == 0) == passes, result.stderr
    if passes:
        assert output.read_text() == f"version={VERSION}\n"
    else:
        assert "does not match" in result.stderr


def test_least_privilege_and_pinned_actions_in_every_workflow() -> None:
    for workflow in _all_workflows():
        assert workflow["permissions"] == {"contents": "read"}
        for name, job in workflow["jobs"].items():
            assert set(job.get("permissions", {"contents": "read"}).items()) <= {
                ("contents", "read"),
                ("packages", "write"),
            }, name
            for step in job["steps"]:
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False
                assert "${{" not in step.get("run", ""), f"{name}: pass values to scripts through env"
    assert RELEASE["jobs"]["publish"]["permissions"] == {"contents": "read", "packages": "write"}


def test_every_pin_names_the_tag_it_was_cut_from() -> None:
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for line in path.read_text().splitlines():
            if "uses:" in line:
                assert re.search(r"@[0-9a-f]{40} # v\d+(\.\d+)*$", line), (path.name, line)


def test_ci_runs_the_quick_start_tests_on_pushes_and_pull_requests() -> None:
    ci = yaml.safe_load((WORKFLOWS / "ci.yml").read_text())
    assert _on(ci) == {"push": {"branches": ["main"]}, "pull_request": None}
    assert [s.get("run") for s in ci["jobs"]["test"]["steps"]][-1] == ".ci/run"


def _index(*platforms: str) -> str:
    manifests = [{"platform": {"os": p.split("/")[0], "architecture": p.split("/")[1]}} for p in platforms]
    manifests.append({"platform": {"os": "unknown", "architecture": "unknown"}})  # an attestation
    return json.dumps({"schemaVersion": 2, "manifests": manifests})


@pytest.mark.parametrize(
    ("pushed", "passes"),
    [(("linux/amd64", "linux/arm64"), True), (("linux/amd64",), False)],
    ids=["both", "amd64-only"],
)
def test_the_platform_check_fails_unless_both_platforms_were_pushed(
    pushed: tuple[str, ...], passes: bool, tmp_path: Path
) -> None:
    (check,) = [s for s in _steps("publish") if "imagetools inspect" in s.get("run", "")]
    tools = tmp_path / "bin"
    tools.mkdir()
    docker = tools / "docker"  # answers `docker buildx imagetools inspect ... --format '{{json .Manifest}}'`
    docker.write_text(f"#!/bin/sh\ncat <<'JSON'\n{_index(*pushed)}\nJSON\n")
    docker.chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "IMAGE_REPOSITORY": "r", "VERSION": VERSION}
    result = subprocess.run(
        ["bash", "-e", "-c", check["run"]],
        cwd=tmp_path,
        env={**env, "PLATFORMS": RELEASE["env"]["PLATFORMS"]},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode == 0) == passes, result.stderr
