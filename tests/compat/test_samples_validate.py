"""TensorFusion's samples and chart renders, in their stored (CRD-defaulted) form, are accepted by
`gpupool validate`, read by the models without losing a spec field, and mean what TensorFusion
means: its CRD defaults are gpupool's. The lenient inputs TensorFusion's schema takes are
accepted and normalised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpupool.cli.main import main
from gpupool.core.model import GPUNodeClaim, GPUNodeClass, GPUPool, SchedulingConfigTemplate
from gpupool.core.model.compat import not_acted_on
from gpupool.core.model.registry import parse_as, parse_manifest
from gpupool.core.quantity import Quantity
from tests.compat.samples import SAMPLES, STORED, documents


@pytest.mark.parametrize("name", [*STORED, "lenient.yaml"])
def test_validate_accepts_every_sample(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SAMPLES / name)]) == 0
    out = capsys.readouterr().out
    assert "invalid" not in out
    assert out.count(": valid") == len(documents(name))


def _same(written: Any, read: Any) -> bool:
    """Equal, quantities compared by value (gpupool writes them canonically: "3000" → "3k")."""
    if isinstance(written, dict) and isinstance(read, dict):
        return written.keys() == read.keys() and all(_same(written[k], read[k]) for k in written)
    if isinstance(written, list) and isinstance(read, list):
        return len(written) == len(read) and all(_same(a, b) for a, b in zip(written, read, strict=True))
    if isinstance(written, str) and isinstance(read, str) and written != read:
        try:
            return Quantity.parse(written) == Quantity.parse(read)
        except ValueError:
            return False
    return bool(written == read)


@pytest.mark.parametrize("doc", documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_every_spec_field_survives_a_round_trip(doc: dict[str, Any]) -> None:
    parsed = parse_manifest(doc).to_manifest()
    assert _same(doc.get("spec"), parsed.get("spec")), parsed.get("spec")
    assert parsed["metadata"] == doc["metadata"]


def test_a_gang_workload_is_accepted_and_its_kept_keys_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SAMPLES / "gang.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Job/tf-job-gang: ok (not validated in depth)" in out
    assert "not acted on: tensor-fusion.ai/gang-enabled" in out
    assert "gang-min-members" not in out and "gang-timeout" not in out, "honoured keys are not listed"


def test_tensor_fusion_defaults_mean_the_same_in_gpupool() -> None:
    bare = parse_as(
        GPUPool,
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "metadata": {"name": "b"},
            "spec": {
                "capacityConfig": {"oversubscription": {}},
                "nodeManagerConfig": {"nodeProvisioner": {"budget": {}}},
            },
        },
    )
    stored = parse_as(GPUPool, documents("cluster.yaml")[1])
    manager = bare.spec.node_manager_config
    assert (manager.default_vendor, manager.default_isolation_mode) == (
        stored.spec.node_manager_config.default_vendor,
        stored.spec.node_manager_config.default_isolation_mode,
    )
    assert bare.spec.capacity_config is not None and stored.spec.capacity_config is not None
    assert bare.spec.capacity_config.oversubscription == stored.spec.capacity_config.oversubscription
    budget = manager.node_provisioner.budget if manager.node_provisioner else None
    assert budget is not None and (budget.budget_per_day, budget.budget_exceed_strategy) == (
        "100",
        "AlertOnly",
    )
    assert bare.to_manifest()["spec"] == {
        "capacityConfig": {"oversubscription": {}},
        "nodeManagerConfig": {"provisioningMode": "AutoSelect", "nodeProvisioner": {"budget": {}}},
    }, "defaults the input left out are not written back"


def test_the_stored_pool_lists_what_gpupool_does_not_act_on() -> None:
    multi_vendor = documents("cluster.yaml")[2]
    notes = not_acted_on(multi_vendor)
    assert "spec.nodeManagerConfig.isolationModeRules[].mode" in notes
    assert (
        "spec.nodeManagerConfig.multiVendorNodeSelector.AMD.nodeSelectorTerms[].matchExpressions[].key"
        in notes
    )
    assert "spec.nodeManagerConfig.nodeCompaction.defrag.timezone" in notes
    assert "spec.capacityConfig.minResources.tflops" not in notes


def test_lenient_inputs_are_accepted_and_normalised() -> None:
    pool, template, node_class, claim = (parse_manifest(doc) for doc in documents("lenient.yaml"))
    assert isinstance(pool, GPUPool) and pool.spec.node_manager_config.node_provisioner is not None
    provisioner = pool.spec.node_manager_config.node_provisioner
    assert provisioner.gpu_requirements[0].values == [], "In without values is accepted"
    assert [t.key for t in provisioner.gpu_taints] == ["dedicated"], "a keyless taint is left out"
    compaction = pool.spec.node_manager_config.node_compaction
    assert compaction is not None and compaction.period == "24h"
    assert (
        isinstance(template, SchedulingConfigTemplate)
        and template.spec.placement.mode == "NodeCompactGPULowLoad"
    )
    assert isinstance(node_class, GPUNodeClass)
    ebs = node_class.spec.block_device_mappings[0].ebs
    assert ebs is not None and str(ebs.volume_size) == "100Gi"
    options = node_class.spec.metadata_options
    assert options is not None and (options.http_endpoint, options.http_protocol_ipv6) == (True, False)
    assert isinstance(claim, GPUNodeClaim) and claim.spec.capacity_type == "Spot"


@pytest.mark.parametrize(
    ("requirement", "error"),
    [
        ({"key": "example.com/rack", "values": ["r1"]}, "unknown requirement key 'example.com/rack'"),
        ({"key": "kubernetes.io/arch", "operator": "Near", "values": ["x"]}, "operator"),
        ({"operator": "Exists"}, "a requirement needs a key"),
    ],
)
def test_what_tensor_fusions_schema_rejects_is_rejected(
    requirement: dict[str, Any], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata: {name: bad}\nspec:\n  nodeManagerConfig:\n"
        f"    nodeProvisioner: {{gpuRequirements: [{requirement!r}]}}\n".replace("'", '"'),
        encoding="utf-8",
    )
    assert main(["validate", str(manifest)]) == 1
    assert error in capsys.readouterr().out
