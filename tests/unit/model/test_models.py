"""Table tests for the tensor-fusion.ai/v1 models: round trips, unknown fields, enums, defaults."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpupool.core.model import (
    GPU,
    GPUNode,
    GPUNodeClaim,
    GPUNodeClass,
    GPUPool,
    GPUResourceQuota,
    ManifestError,
    SchedulingConfigTemplate,
    TensorFusionCluster,
    parse_manifest,
)
from gpupool.core.quantity import Quantity
from tests.unit.model.builders import (
    claim_manifest,
    cluster_manifest,
    node_class_manifest,
    pool_manifest,
)

QUOTA: dict[str, Any] = {
    "apiVersion": "tensor-fusion.ai/v1",
    "kind": "GPUResourceQuota",
    "metadata": {"name": "q", "namespace": "team-a"},
    "spec": {
        "total": {
            "requests": {"tflops": "1k", "vram": "1Ti"},
            "maxWorkers": 100,
            "alertThresholdPercent": 90,
        },
        "single": {"maxRequests": {"tflops": "100", "vram": "40Gi"}, "maxGPUCount": 4},
    },
}
TEMPLATE: dict[str, Any] = {
    "apiVersion": "tensor-fusion.ai/v1",
    "kind": "SchedulingConfigTemplate",
    "metadata": {"name": "default"},
    "spec": {
        "placement": {"mode": "CompactFirst", "allowUsingLocalGPU": True, "gpuFilters": [{"type": "x"}]},
        "verticalScalingRules": [{"name": "r", "autoScaling": {"autoSetResources": {"enable": True}}}],
        "hypervisor": {"autoFreezeAndResume": {"autoFreeze": [{"qos": "low"}]}},
    },
}
GPU_OBJECT: dict[str, Any] = {
    "apiVersion": "tensor-fusion.ai/v1",
    "kind": "GPU",
    "metadata": {"name": "gpu-1", "labels": {"tensor-fusion.ai/gpupool": "elastic"}},
    "status": {
        "phase": "Running",
        "vendor": "NVIDIA",
        "capacity": {"tflops": "65", "vram": "15Gi"},
        "available": {"tflops": "32500m", "vram": "7680Mi"},
        "uuid": "GPU-1",
        "index": 0,
        "gpuModel": "T4",
        "nodeSelector": {"kubernetes.io/hostname": "node-1"},
        "usedBy": "tensor-fusion",
    },
}
GPU_NODE: dict[str, Any] = {
    "apiVersion": "tensor-fusion.ai/v1",
    "kind": "GPUNode",
    "metadata": {"name": "node-1"},
    "spec": {"manageMode": "Provisioned", "costPerHour": "0.526"},
    "status": {
        "phase": "Running",
        "totalTFlops": "130",
        "totalVRAM": "30Gi",
        "availableTFlops": "130",
        "availableVRAM": "30Gi",
        "totalGPUs": 2,
        "managedGPUs": 2,
        "nodeInfo": {"instanceID": "i-1", "gpuModel": "T4", "ramSize": "64Gi"},
    },
}

ALL_KINDS = [
    pytest.param(pool_manifest(), GPUPool, id="GPUPool"),
    pytest.param(cluster_manifest(), TensorFusionCluster, id="TensorFusionCluster"),
    pytest.param(claim_manifest(), GPUNodeClaim, id="GPUNodeClaim"),
    pytest.param(node_class_manifest(), GPUNodeClass, id="GPUNodeClass"),
    pytest.param(QUOTA, GPUResourceQuota, id="GPUResourceQuota"),
    pytest.param(TEMPLATE, SchedulingConfigTemplate, id="SchedulingConfigTemplate"),
    pytest.param(GPU_OBJECT, GPU, id="GPU"),
    pytest.param(GPU_NODE, GPUNode, id="GPUNode"),
]


@pytest.mark.parametrize(("manifest", "model"), ALL_KINDS)
def test_round_trip_preserves_every_field(manifest: dict[str, Any], model: type[Any]) -> None:
    parsed = parse_manifest(manifest)
    assert type(parsed) is model
    assert parsed.to_manifest() == manifest


def test_round_trip_prints_quantities_canonically() -> None:
    manifest = pool_manifest(capacityConfig={"minResources": {"tflops": "1.5e3", "vram": "16384Mi"}})
    dumped = parse_manifest(manifest).to_manifest()
    assert dumped["spec"]["capacityConfig"]["minResources"] == {"tflops": "1500", "vram": "16Gi"}


@pytest.mark.parametrize(
    ("text", "exact", "canonical"),
    [
        ("65", Quantity(65), "65"),
        ("4k", Quantity(4000), "4k"),
        ("15Gi", Quantity(15 * 2**30), "15Gi"),
        ("500m", Quantity.parse("0.5"), "500m"),
        ("1.5e3", Quantity(1500), "1500"),
        (65, Quantity(65), "65"),
    ],
)
def test_quantity_fields_parse_exactly(text: object, exact: Quantity, canonical: str) -> None:
    pool = GPUPool.model_validate(pool_manifest(capacityConfig={"minResources": {"tflops": text}}))
    assert pool.spec.capacity_config is not None
    minimum = pool.spec.capacity_config.min_resources
    assert minimum is not None and minimum.tflops == exact
    assert pool.to_manifest()["spec"]["capacityConfig"]["minResources"]["tflops"] == canonical


def _set(manifest: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(manifest)
    node: Any = changed
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[keys[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("manifest", "path", "value", "expected"),
    [
        (pool_manifest(), "spec.colour", "red", "spec.colour: unknown field"),
        (
            pool_manifest(),
            "spec.nodeManagerConfig.nodeProvisioner.gpuLabels",
            {},
            "spec.nodeManagerConfig.nodeProvisioner.gpuLabels: unknown field",
        ),
        (
            cluster_manifest(),
            "spec.gpuPools.0.specTemplate.capacityConfig.minResources.tflop",
            "1",
            "spec.gpuPools[0].specTemplate.capacityConfig.minResources.tflop: unknown field",
        ),
        (
            pool_manifest(),
            "spec.capacityConfig.minResources.tflops",
            "abc",
            "spec.capacityConfig.minResources.tflops: not a quantity: 'abc'",
        ),
        (
            pool_manifest(),
            "spec.nodeManagerConfig.provisioningMode",
            "Manual",
            "spec.nodeManagerConfig.provisioningMode: "
            "Input should be 'AutoSelect', 'Karpenter' or 'Provisioned'",
        ),
        (
            pool_manifest(),
            "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements.0.operator",
            "Like",
            "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[0].operator: Input should be",
        ),
        (
            pool_manifest(),
            "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements.0.key",
            "example.com/rack",
            "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[0]: "
            "unknown requirement key 'example.com/rack'",
        ),
        (
            pool_manifest(),
            "spec.nodeManagerConfig.nodeCompaction.period",
            "5 minutes",
            "spec.nodeManagerConfig.nodeCompaction.period: not a duration: '5 minutes'",
        ),
        (
            pool_manifest(),
            "spec.nodeManagerConfig.nodeProvisioner.gpuTaints.0.effect",
            "Sometimes",
            "spec.nodeManagerConfig.nodeProvisioner.gpuTaints[0].effect: Input should be",
        ),
        (
            pool_manifest(),
            "spec.capacityConfig.oversubscription.vramExpandToHostMem",
            150,
            "spec.capacityConfig.oversubscription.vramExpandToHostMem: "
            "Input should be less than or equal to 100",
        ),
        (claim_manifest(), "spec.capacityType", "cheap", "spec.capacityType: Input should be 'OnDemand'"),
        (
            cluster_manifest(),
            "spec.computingVendor.type",
            "digitalocean",
            "spec.computingVendor.type: Input should be",
        ),
        (
            TEMPLATE,
            "spec.placement.mode",
            "Random",
            "spec.placement.mode: Input should be 'CompactFirst', 'LowLoadFirst', 'NodeCompactGPULowLoad',",
        ),
        (QUOTA, "spec.single.max", {}, "spec.single.max: unknown field"),
        (node_class_manifest(), "spec.amiFamily", "AL2023", "spec.amiFamily: unknown field"),
    ],
)
def test_invalid_fields_are_reported_with_their_path(
    manifest: dict[str, Any], path: str, value: Any, expected: str
) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(_set(manifest, path, value))
    messages = [str(error) for error in caught.value.errors]
    assert any(message.startswith(expected) for message in messages), messages


def test_missing_claim_offer_is_required() -> None:
    manifest = claim_manifest()
    del manifest["spec"]["tflopsOffered"]
    with pytest.raises(ManifestError) as caught:
        parse_manifest(manifest)
    assert [str(error) for error in caught.value.errors] == ["spec.tflopsOffered: required field is missing"]


def test_karpenter_node_class_ref_needs_all_four_fields() -> None:
    manifest = pool_manifest()
    manifest["spec"]["nodeManagerConfig"]["nodeProvisioner"]["karpenterNodeClassRef"] = {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "gpu",
    }
    with pytest.raises(ManifestError, match=r"karpenterNodeClassRef\.version: required field is missing"):
        parse_manifest(manifest)


@pytest.mark.parametrize(
    ("operator", "values", "ok"),
    [
        ("In", ["a"], True),
        ("NotIn", ["a", "b"], True),
        ("Exists", [], True),
        ("DoesNotExist", [], True),
        ("Gt", ["4"], True),
        ("Lt", ["-1"], True),
        ("Exists", ["a"], False),
        ("Gt", ["four"], False),
        ("Lt", ["1", "2"], False),
        ("NotIn", [], True),
    ],
)
def test_requirement_operators(operator: str, values: list[str], ok: bool) -> None:
    requirement = {"key": "kubernetes.io/arch", "operator": operator, "values": values}
    manifest = pool_manifest()
    manifest["spec"]["nodeManagerConfig"]["nodeProvisioner"]["gpuRequirements"] = [requirement]
    if ok:
        parse_manifest(manifest)
    else:
        with pytest.raises(ManifestError):
            parse_manifest(manifest)


def test_defaults() -> None:
    pool = GPUPool.model_validate(
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "spec": {"nodeManagerConfig": {"nodeCompaction": {}}},
        }
    )
    assert pool.spec.node_manager_config.provisioning_mode == "AutoSelect"
    assert pool.spec.node_manager_config.node_compaction is not None
    assert pool.spec.node_manager_config.node_compaction.period == "5m"
    assert (
        GPUPool.model_validate(
            {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool"}
        ).spec.node_manager_config.provisioning_mode
        == "AutoSelect"
    )
    template = SchedulingConfigTemplate.model_validate(
        {"apiVersion": "tensor-fusion.ai/v1", "kind": "SchedulingConfigTemplate", "spec": {"placement": {}}}
    )
    assert template.spec.placement.mode == "NodeCompactGPULowLoad"
    claim = parse_manifest({**claim_manifest(), "status": {}})
    assert isinstance(claim, GPUNodeClaim) and claim.status is not None and claim.status.phase == "Pending"
    cluster = parse_manifest(cluster_manifest())
    assert isinstance(cluster, TensorFusionCluster)
    assert cluster.spec.computing_vendor is not None and cluster.spec.computing_vendor.enable is True


def test_defrag_is_off_by_default_with_the_documented_schedule() -> None:
    manifest = pool_manifest()
    manifest["spec"]["nodeManagerConfig"]["nodeCompaction"] = {"period": "5m", "defrag": {}}
    pool = parse_manifest(manifest)
    assert isinstance(pool, GPUPool)
    compaction = pool.spec.node_manager_config.node_compaction
    assert compaction is not None and compaction.defrag is not None
    defrag = compaction.defrag
    assert (defrag.enabled, defrag.schedule, defrag.max_duration, defrag.utilization_threshold_percent) == (
        False,
        "0 3 * * *",
        "2h",
        40,
    )


def test_claim_status_accepts_failed_and_ignores_unknown_status_fields() -> None:
    manifest = claim_manifest()
    manifest["status"] = {
        "phase": "Failed",
        "reason": "LaunchTimeout",
        "message": "no node in 5m",
        "extra": 1,
    }
    claim = parse_manifest(manifest)
    assert isinstance(claim, GPUNodeClaim) and claim.status is not None
    assert (claim.status.phase, claim.status.reason) == ("Failed", "LaunchTimeout")
    assert "extra" not in claim.to_manifest()["status"]


def test_metadata_keeps_fields_it_does_not_name() -> None:
    manifest = pool_manifest()
    manifest["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    manifest["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"
    assert parse_manifest(manifest).to_manifest()["metadata"] == manifest["metadata"]


def test_models_are_frozen() -> None:
    pool = parse_manifest(pool_manifest())
    with pytest.raises(ValueError, match="frozen"):
        pool.metadata.name = "other"  # type: ignore[misc]


def test_cluster_finds_inline_pool_spec() -> None:
    cluster = parse_manifest(cluster_manifest())
    assert isinstance(cluster, TensorFusionCluster)
    spec = cluster.pool_spec("elastic")
    assert spec is not None and spec.node_manager_config.provisioning_mode == "Provisioned"
    assert cluster.pool_spec("missing") is None
