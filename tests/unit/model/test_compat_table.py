"""docs/compatibility.md's field table is what the rules say, and `gpupool validate` reports the
fields a manifest sets that gpupool does not act on (without making it invalid)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.cli.main import main
from gpupool.core.model.compat import classify, compatibility_markdown, field_paths, not_acted_on
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.scheduling import SchedulingConfigTemplate

DOC = Path(__file__).resolve().parents[3] / "docs" / "compatibility.md"


def test_the_documented_table_is_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- compat-table:start -->\n", 1)[1].split("<!-- compat-table:end -->", 1)[0]
    assert table == compatibility_markdown(), (
        "run `gpupool validate --compat-table` into docs/compatibility.md"
    )


def test_every_field_tensor_fusion_writes_into_a_pool_is_listed() -> None:
    paths = field_paths(GPUPool)
    for path in (
        "spec.nodeManagerConfig.defaultVendor",
        "spec.nodeManagerConfig.defaultIsolationMode",
        "spec.nodeManagerConfig.isolationModeRules[].selector.matchExpressions[].key",
        "spec.nodeManagerConfig.multiVendorNodeSelector.*.nodeSelectorTerms[].matchExpressions[].key",
        "spec.nodeManagerConfig.nodeCompaction.defrag.timezone",
    ):
        assert path in paths
    assert "spec.reBalancer.interval" in field_paths(SchedulingConfigTemplate)


@pytest.mark.parametrize(
    ("kind", "path", "status"),
    [
        ("GPUPool", "spec.capacityConfig.minResources.tflops", "honoured"),
        ("GPUPool", "spec.nodeManagerConfig.defaultVendor", "not acted on"),
        ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.budget.budgetPerDay", "honoured"),
        ("GPUPool", "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[].operator", "different"),
        (
            "TensorFusionCluster",
            "spec.gpuPools[].specTemplate.nodeManagerConfig.defaultVendor",
            "not acted on",
        ),
        ("TensorFusionCluster", "spec.gpuPools[].specTemplate.capacityConfig.warmResources.vram", "honoured"),
        ("SchedulingConfigTemplate", "spec.placement.mode", "honoured"),
        ("SchedulingConfigTemplate", "spec.hypervisor.autoFreezeAndResume", "not acted on"),
        ("WorkloadProfile", "spec.resources.requests.tflops", "honoured"),
    ],
)
def test_classification(kind: str, path: str, status: str) -> None:
    assert classify(kind, path)[0] == status


def test_not_acted_on_names_the_set_fields_and_kept_keys() -> None:
    pool = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "spec": {
            "nodeManagerConfig": {"defaultVendor": "NVIDIA"},
            "capacityConfig": {"minResources": {"vram": "1"}},
        },
    }
    assert not_acted_on(pool) == ["spec.nodeManagerConfig.defaultVendor"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"annotations": {"tensor-fusion.ai/partition-id": "1g"}},
    }
    assert not_acted_on(pod) == ["tensor-fusion.ai/partition-id (annotation/label)"]
    gang = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"annotations": {"tensor-fusion.ai/gang-timeout": "1m"}},
    }
    assert not_acted_on(gang) == [], "gang keys are honoured"


def test_validate_reports_not_acted_on_fields_and_extensions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "pool.yaml"
    manifest.write_text(
        "apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata: {name: p}\nspec:\n"
        "  nodeManagerConfig:\n    isolationModeRules: [{mode: hard}]\n"
        "    nodeProvisioner:\n"
        "      gpuRequirements: [{key: kubernetes.io/arch, operator: NotIn, values: [arm64]}]\n",
        encoding="utf-8",
    )
    assert main(["validate", str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "GPUPool/p: valid" in out
    assert "not acted on: spec.nodeManagerConfig.isolationModeRules[].mode" in out
    assert "gpuRequirements[0].operator NotIn: a gpupool extension" in out


def test_validate_without_files_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate"]) == 2
    assert "needs at least one FILE" in capsys.readouterr().err
