"""`gpupool plan`: the exact JSON shape, pools from GPUPool and TensorFusionCluster files, --state,
region and cloud defaults, never past maxResources, and one-line errors for bad input."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from gpupool.cli.main import main

EXAMPLES = resources.files("gpupool").joinpath("examples")
POOL = """\
apiVersion: tensor-fusion.ai/v1
kind: GPUPool
metadata:
  name: elastic
spec:
  capacityConfig:
    minResources: {tflops: "TFLOPS", vram: 64Gi}
    maxResources: {tflops: "MAX", vram: 1Ti}
  nodeManagerConfig:
    provisioningMode: Provisioned
    nodeProvisioner:
      gpuRequirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [OnDemand]}
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["plan", *argv, "--json"]) == 0
    captured = capsys.readouterr()
    result: dict[str, Any] = json.loads(captured.out)
    return result


def test_json_shape_is_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _plan(
        capsys, "--pool", _write(tmp_path, "p.yaml", POOL.replace("TFLOPS", "260").replace("MAX", "2000"))
    )
    assert set(result) == {"gap", "nodes", "hourlyCost", "reasons"}
    assert result["gap"] == {"tflops": 260.0, "vramGiB": 64.0}
    assert result["nodes"]
    for node in result["nodes"]:
        assert set(node) == {"instanceType", "zone", "capacityType", "count", "hourlyPrice"}
        assert node["capacityType"] == "OnDemand" and node["zone"].startswith("us-east-1")
        assert node["count"] >= 1
    assert result["hourlyCost"] == pytest.approx(sum(n["hourlyPrice"] * n["count"] for n in result["nodes"]))
    assert isinstance(result["reasons"], list)


def test_max_clips_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _plan(
        capsys, "--pool", _write(tmp_path, "p.yaml", POOL.replace("TFLOPS", "1000").replace("MAX", "200"))
    )
    assert result["gap"]["tflops"] == 200.0
    assert any(r.startswith("MaxResourceConstraintReached") for r in result["reasons"])
    main(["catalog", "--cloud", "aws", "--json"])
    specs = {r["instanceType"]: r for r in json.loads(capsys.readouterr().out)}
    added = sum(
        specs[n["instanceType"]]["tflopsPerGpu"] * specs[n["instanceType"]]["gpuCount"] * n["count"]
        for n in result["nodes"]
    )
    assert added <= 200


def test_cluster_example_with_state_uses_default_region_and_in_flight(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pool = str(EXAMPLES.joinpath("aws-provisioned-pool.yaml"))
    state = str(EXAMPLES.joinpath("aws-provisioned-state.yaml"))
    without = _plan(capsys, "--pool", pool)
    with_state = _plan(capsys, "--pool", pool, "--state", state)
    assert without["gap"] == {"tflops": 1000.0, "vramGiB": 192.0}
    # min 1000 − (121 on the node + 362 in flight); VRAM 192Gi − (24Gi + 48Gi)
    assert with_state["gap"] == {"tflops": 517.0, "vramGiB": 120.0}
    assert with_state["hourlyCost"] < without["hourlyCost"]
    assert all(n["zone"] != "us-east-1f" for n in without["nodes"])


def test_alibaba_cluster_plans_in_its_region_and_zones(capsys: pytest.CaptureFixture[str]) -> None:
    result = _plan(capsys, "--pool", str(EXAMPLES.joinpath("alibaba-provisioned-pool.yaml")))
    assert result["nodes"] and all(n["instanceType"].startswith("ecs.gn") for n in result["nodes"])
    assert {n["zone"] for n in result["nodes"]} <= {"cn-hangzhou-h", "cn-hangzhou-i"}


def test_table_output_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--pool", str(EXAMPLES.joinpath("aws-provisioned-pool.yaml"))]) == 0
    out = capsys.readouterr().out
    assert "INSTANCE TYPE" in out and "hourly cost: $" in out and "gap: 1000 TFLOPS" in out


TWO_POOLS = """\
apiVersion: tensor-fusion.ai/v1
kind: TensorFusionCluster
metadata: {name: c}
spec:
  gpuPools:
    - name: a
      specTemplate: {capacityConfig: {minResources: {tflops: "65", vram: 16Gi}}}
    - name: b
      specTemplate: {capacityConfig: {minResources: {tflops: "130", vram: 32Gi}}}
"""


def test_pool_name_picks_among_several(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "c.yaml", TWO_POOLS)
    assert _plan(capsys, "--pool", path, "--pool-name", "b")["gap"]["tflops"] == 130.0
    assert main(["plan", "--pool", path]) == 2
    assert "--pool-name" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "text", "extra", "message"),
    [
        ("bad-yaml", "a: [\n", [], "invalid YAML"),
        ("bad-quantity", POOL.replace("TFLOPS", "abc").replace("MAX", "1"), [], "minResources.tflops"),
        (
            "unknown-kind",
            "apiVersion: tensor-fusion.ai/v1\nkind: Widget\nmetadata: {name: w}\n",
            [],
            "unknown kind",
        ),
        ("no-pool", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", [], "unknown kind"),
        ("bad-region", POOL.replace("TFLOPS", "1").replace("MAX", "1"), ["--region", "mars-1"], "mars-1"),
        ("bad-pool-name", TWO_POOLS, ["--pool-name", "zz"], "no pool named"),
        (
            "bad-capacity-type",
            POOL.replace("TFLOPS", "1").replace("MAX", "1").replace("[OnDemand]", "[Cheap]"),
            [],
            "unknown capacity type",
        ),
    ],
)
def test_bad_input_is_one_line_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, extra: list[str], message: str
) -> None:
    code = main(["plan", "--pool", _write(tmp_path, f"{name}.yaml", text), *extra])
    err = capsys.readouterr().err
    assert code in (1, 2)
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_file_and_bad_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--pool", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    pool = _write(tmp_path, "p.yaml", POOL.replace("TFLOPS", "65").replace("MAX", "1000"))
    state = _write(tmp_path, "s.yaml", POOL.replace("TFLOPS", "65").replace("MAX", "1000"))
    assert main(["plan", "--pool", pool, "--state", state]) == 2
    assert "unsupported kind GPUPool" in capsys.readouterr().err


BIG_POOL = """\
apiVersion: tensor-fusion.ai/v1
kind: GPUPool
metadata: {name: big}
spec:
  capacityConfig:
    minResources: {tflops: "13587", vram: 3008Gi}
"""


def test_json_stays_clean_when_the_solver_needs_highs(tmp_path: Path) -> None:
    """A ~100-node mix goes to HiGHS, whose banner is printed on file descriptor 1, not sys.stdout."""
    import subprocess
    import sys

    path = _write(tmp_path, "big.yaml", BIG_POOL)
    done = subprocess.run(
        [sys.executable, "-m", "gpupool.cli.main", "plan", "--pool", path, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert sum(n["count"] for n in result["nodes"]) <= 100 and result["gap"]["tflops"] == 13587.0
