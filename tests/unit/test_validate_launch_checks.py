"""`gpupool validate` catches what a pool's launch would trip on, one line per problem naming the
field and the fix (`core.planning.readiness`), and every manifest the package ships validates.

Covers: min and warm above max (TFLOPS, VRAM); a Provisioned pool without a nodeClass; a
Karpenter pool without karpenterNodeClassRef; a gpuRequirements entry that leaves no priced
offering (named by its index, with what is offered) and one that cannot be evaluated; a
maxResources below every allowed instance (the launch would otherwise blame capacity); a
cluster's region that the catalog does not price, and a bad `--region` (exit 2); a lone GPUPool
is judged against every region unless `--cloud`/`--region` narrow it; the same pool in
AutoSelect mode is not held to the catalog; a YAML list of objects validates entry by entry;
each refusal exits 1; every file under gpupool/examples validates. An install guide's `@NAME@`
placeholders: a placeholder region is judged against every region of its catalog, a requirement
on a placeholder counts as Exists (keeping the other requirements' indexes), the placeholders
left to fill are listed, and a placeholder does not hide a real problem.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from gpupool.cli.main import main
from gpupool.core.model.pool import GPUPoolSpec
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.planning.readiness import launch_problems

CLUSTER = """\
apiVersion: tensor-fusion.ai/v1
kind: TensorFusionCluster
metadata: {name: tf}
spec:
  computingVendor: {name: aws, type: aws, params: {defaultRegion: us-east-1}}
  gpuPools:
    - name: elastic
      specTemplate:
        capacityConfig:
          minResources: {tflops: "MIN", vram: 16Gi}
          warmResources: {tflops: "65", vram: WARMVRAM}
          maxResources: {tflops: "MAX", vram: 64Gi}
        nodeManagerConfig:
          provisioningMode: MODE
          nodeProvisioner:
            NODECLASS
            gpuRequirements:
              - {key: karpenter.sh/capacity-type, operator: In, values: [OnDemand]}
              - {key: node.kubernetes.io/instance-type, operator: In, values: [TYPES]}
"""
PREFIX = "spec.gpuPools[0].specTemplate."


def _cluster(**changes: str) -> str:
    values = {
        "MIN": "65",
        "MAX": "260",
        "WARMVRAM": "16Gi",
        "MODE": "Provisioned",
        "NODECLASS": "nodeClass: gpu-nodes",
        "TYPES": "g4dn.xlarge, g5.xlarge",
        **changes,
    }
    text = CLUSTER
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def _validate(tmp_path: Path, text: str, *flags: str) -> tuple[int, list[str]]:
    path = tmp_path / "pool.yaml"
    path.write_text(text, encoding="utf-8")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["validate", *flags, str(path)])
    return code, [line.strip() for line in out.getvalue().splitlines()]


def _problem(lines: list[str], path: str) -> str:
    found = [line for line in lines if line.startswith(f"{path}: ")]
    assert len(found) == 1, lines
    return found[0]


def test_a_launchable_cluster_is_valid(tmp_path: Path) -> None:
    code, lines = _validate(tmp_path, _cluster())
    assert code == 0, lines
    assert lines[0].endswith("TensorFusionCluster/tf: valid")


@pytest.mark.parametrize(
    ("changes", "path", "fix"),
    [
        (
            {"MIN": "300"},
            "capacityConfig.minResources.tflops",
            "lower minResources.tflops or raise maxResources.tflops",
        ),
        (
            {"WARMVRAM": "80Gi"},
            "capacityConfig.warmResources.vram",
            "lower warmResources.vram or raise maxResources.vram",
        ),
        (
            {"NODECLASS": "budget: {}"},
            "nodeManagerConfig.nodeProvisioner.nodeClass",
            "set nodeClass to the name of one",
        ),
        (
            {"MODE": "Karpenter"},
            "nodeManagerConfig.nodeProvisioner.karpenterNodeClassRef",
            "set karpenterNodeClassRef {group, kind, version, name}",
        ),
        (
            {"TYPES": "x9.tiny"},
            "nodeManagerConfig.nodeProvisioner.gpuRequirements[1]",
            "leaves no priced offering in aws us-east-1 with the requirements before it (offered: g4dn",
        ),
        (
            {"MAX": "20"},
            "capacityConfig.maxResources",
            "is below every instance gpuRequirements allow in aws us-east-1",
        ),
    ],
)
def test_each_launch_problem_is_one_line_naming_the_field_and_the_fix(
    tmp_path: Path, changes: dict[str, str], path: str, fix: str
) -> None:
    code, lines = _validate(tmp_path, _cluster(**changes))
    assert code == 1, lines
    assert lines[0].endswith("TensorFusionCluster/tf: invalid")
    assert fix in _problem(lines, PREFIX + path)
    assert lines[-1] == "1 invalid document(s)"


def test_max_below_every_instance_names_the_smallest_and_the_fix(tmp_path: Path) -> None:
    _code, lines = _validate(tmp_path, _cluster(MIN="10", MAX="20"))
    line = _problem(lines, PREFIX + "capacityConfig.maxResources")
    assert "20 TFLOPS, 64Gi VRAM is below" in line
    assert "(the smallest: g4dn.xlarge: 65 TFLOPS, 16Gi VRAM)" in line
    assert "raise maxResources to at least 65 TFLOPS and 16Gi VRAM, or allow smaller instances" in line


def test_a_requirement_that_cannot_be_evaluated_is_named(tmp_path: Path) -> None:
    text = _cluster().replace("values: [OnDemand]", "values: [Preemptible]")
    code, lines = _validate(tmp_path, text)
    assert code == 1
    assert "unknown capacity type 'Preemptible'" in _problem(
        lines, PREFIX + "nodeManagerConfig.nodeProvisioner.gpuRequirements[0]"
    )


def test_a_region_the_catalog_does_not_price(tmp_path: Path) -> None:
    code, lines = _validate(tmp_path, _cluster().replace("us-east-1", "mars-north-1"))
    assert code == 1
    assert "'mars-north-1' is not in the aws catalog; use one of" in _problem(
        lines, "spec.computingVendor.params.defaultRegion"
    )
    code, _lines = _validate(tmp_path, _cluster(), "--region", "mars-north-1")
    assert code == 2


def test_placeholders_are_listed_and_judged_in_any_region_without_hiding_problems(
    tmp_path: Path,
) -> None:
    zone = "              - {key: topology.kubernetes.io/zone, operator: In, values: ['@ZONE_ID@']}\n"
    placeholder = _cluster().replace("us-east-1", "'@AWS_REGION@'")
    at_zone = placeholder.replace("            gpuRequirements:\n", "            gpuRequirements:\n" + zone)
    code, lines = _validate(tmp_path, at_zone)
    assert code == 0, lines
    assert "placeholders to fill before applying: @AWS_REGION@, @ZONE_ID@" in lines
    code, lines = _validate(tmp_path, at_zone.replace("g4dn.xlarge, g5.xlarge", "p9.nonesuch"))
    assert code == 1
    assert "leaves no priced offering in any aws region" in _problem(
        lines, PREFIX + "nodeManagerConfig.nodeProvisioner.gpuRequirements[2]"
    )
    code, lines = _validate(tmp_path, placeholder, "--region", "@AWS_REGION@")
    assert code == 2


def test_a_lone_pool_is_judged_in_any_region_unless_narrowed(tmp_path: Path) -> None:
    pool = """\
apiVersion: tensor-fusion.ai/v1
kind: GPUPool
metadata: {name: p}
spec:
  nodeManagerConfig:
    provisioningMode: Provisioned
    nodeProvisioner:
      nodeClass: gpu-nodes
      gpuRequirements:
        - {key: topology.kubernetes.io/zone, operator: In, values: [cn-hangzhou-h]}
"""
    code, lines = _validate(tmp_path, pool)
    assert code == 0, lines
    code, lines = _validate(tmp_path, pool, "--cloud", "aws")
    assert code == 1
    assert "leaves no priced offering in any aws region" in _problem(
        lines, "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[0]"
    )


def test_autoselect_pools_are_not_held_to_the_catalog() -> None:
    spec = GPUPoolSpec.model_validate(
        {
            "capacityConfig": {"maxResources": {"tflops": "1"}},
            "nodeManagerConfig": {"provisioningMode": "AutoSelect"},
        }
    )
    assert launch_problems(spec, catalog_offerings("aws", "us-east-1"), where="aws us-east-1") == []


def test_a_yaml_list_validates_entry_by_entry(tmp_path: Path) -> None:
    listed = (
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n- {apiVersion: v1, kind: Pod, metadata: 3}\n"
    )
    code, lines = _validate(tmp_path, listed)
    assert code == 1
    assert lines[0].endswith("#1 Node/n1: ok (not validated in depth)")
    assert lines[1].endswith("#2 Pod/<unnamed>: invalid")


def _example_files() -> list[Path]:
    root = Path(str(resources.files("gpupool").joinpath("examples")))
    return sorted(root.rglob("*.yaml"))


@pytest.mark.parametrize("example", _example_files(), ids=lambda path: path.name)
def test_every_shipped_example_validates(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", str(example)])
    assert code == 0, capsys.readouterr().out
