"""The chart's CRDs are exactly what the models generate, and every schema is structural."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.cli.main import main
from gpupool.core.model.crd import crd_file_name, generate_crds, render_crd

CHART_CRDS = Path(__file__).resolve().parents[2] / "incluster" / "chart" / "crds"


def test_regenerating_leaves_no_diff() -> None:
    crds = generate_crds()
    expected = {crd_file_name(crd): render_crd(crd) for crd in crds}
    on_disk = {path.name: path.read_text(encoding="utf-8") for path in CHART_CRDS.glob("*.yaml")}
    assert sorted(on_disk) == sorted(expected), "run `gpupool crds --write incluster/chart/crds`"
    for name, text in expected.items():
        assert on_disk[name] == text, f"{name} is stale: run `gpupool crds --write incluster/chart/crds`"


def test_crds_command_writes_the_same_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--write", str(tmp_path / "out")]) == 0
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir()}
    assert written == {p.name: p.read_text(encoding="utf-8") for p in CHART_CRDS.glob("*.yaml")}
    assert main(["crds"]) == 0
    printed = list(yaml.safe_load_all(capsys.readouterr().out.split("\n", 1)[1]))
    assert [d["metadata"]["name"] for d in printed] == [c["metadata"]["name"] for c in generate_crds()]


def _walk(schema: dict[str, Any], where: str) -> list[str]:
    """Structural-schema violations: a node without a type (unless int-or-string, or any value
    kept with x-kubernetes-preserve-unknown-fields, as Kubernetes allows)."""
    problems: list[str] = []
    if schema.get("x-kubernetes-int-or-string"):
        return problems
    if "type" not in schema and schema.get("x-kubernetes-preserve-unknown-fields") and len(schema) == 1:
        return problems
    if "type" not in schema:
        problems.append(f"{where}: no type")
    for name, child in schema.get("properties", {}).items():
        problems += _walk(child, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        problems += _walk(schema["items"], f"{where}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += _walk(schema["additionalProperties"], f"{where}.*")
    if "anyOf" in schema or "oneOf" in schema or "$ref" in schema:
        problems.append(f"{where}: anyOf/oneOf/$ref outside int-or-string")
    return problems


@pytest.mark.parametrize("crd", generate_crds(), ids=lambda crd: crd["spec"]["names"]["kind"])
def test_schemas_are_structural(crd: dict[str, Any]) -> None:
    version = crd["spec"]["versions"][0]
    assert _walk(version["schema"]["openAPIV3Schema"], "") == []


def _schema(kind: str) -> dict[str, Any]:
    crd = next(c for c in generate_crds() if c["spec"]["names"]["kind"] == kind)
    return crd["spec"]["versions"][0]  # type: ignore[no-any-return]


def test_scope_status_and_columns() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c for c in generate_crds()}
    assert set(by_kind) == {
        "TensorFusionCluster",
        "GPUPool",
        "GPUNodeClass",
        "GPUNodeClaim",
        "GPUNode",
        "GPU",
        "SchedulingConfigTemplate",
        "GPUResourceQuota",
        "ProviderConfig",
        "WorkloadProfile",
        "TensorFusionWorkload",
        "TensorFusionConnection",
    }
    namespaced = {k for k, c in by_kind.items() if c["spec"]["scope"] == "Namespaced"}
    assert namespaced == {
        "GPUResourceQuota",
        "WorkloadProfile",
        "TensorFusionWorkload",
        "TensorFusionConnection",
    }
    assert _schema("GPUPool")["subresources"] == {"status": {}}
    claim_columns = {c["name"]: c["jsonPath"] for c in _schema("GPUNodeClaim")["additionalPrinterColumns"]}
    assert claim_columns["Phase"] == ".status.phase"
    assert claim_columns["Instance Type"] == ".spec.instanceType"
    assert claim_columns["Instance ID"] == ".status.instanceID"
    assert by_kind["GPUPool"]["metadata"]["name"] == "gpupools.tensor-fusion.ai"


def test_quantities_are_int_or_string_and_defaults_are_declared() -> None:
    spec = _schema("GPUPool")["schema"]["openAPIV3Schema"]["properties"]["spec"]
    tflops = spec["properties"]["capacityConfig"]["properties"]["minResources"]["properties"]["tflops"]
    assert tflops["x-kubernetes-int-or-string"] is True
    manager = spec["properties"]["nodeManagerConfig"]["properties"]
    assert manager["provisioningMode"]["default"] == "AutoSelect"
    assert manager["provisioningMode"]["enum"] == ["AutoSelect", "Karpenter", "Provisioned"]
    assert manager["nodeCompaction"]["properties"]["period"]["default"] == "5m"
    placement = _schema("SchedulingConfigTemplate")["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert placement["properties"]["placement"]["properties"]["mode"]["default"] == "NodeCompactGPULowLoad"


def test_preserve_unknown_fields_only_where_loose() -> None:
    spec = _schema("GPUPool")["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "x-kubernetes-preserve-unknown-fields" not in spec
    assert "x-kubernetes-preserve-unknown-fields" not in spec["properties"]["capacityConfig"]
    hypervisor = spec["properties"]["componentConfig"]["properties"]["hypervisor"]
    assert hypervisor == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    status = _schema("GPUPool")["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert status["x-kubernetes-preserve-unknown-fields"] is True


def _pruned(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    """Fields of `value` the API server would prune (or reject by type) under `schema`."""
    if schema.get("x-kubernetes-int-or-string"):
        return [] if isinstance(value, int | str) else [f"{where}: not int-or-string"]
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return []
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        problems: list[str] = []
        for key, child in value.items():
            if key in schema.get("properties", {}):
                problems += _pruned(child, schema["properties"][key], f"{where}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                problems += _pruned(child, schema["additionalProperties"], f"{where}.{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields") and where:
                problems.append(f"{where}.{key}: pruned")
        return problems
    if kind == "array":
        if not isinstance(value, list):
            return [f"{where}: not an array"]
        return [p for i, item in enumerate(value) for p in _pruned(item, schema["items"], f"{where}[{i}]")]
    expected = {"string": str, "integer": int, "boolean": bool, "number": int | float}[kind]
    if not isinstance(value, expected) or (kind == "integer" and isinstance(value, bool)):
        return [f"{where}: not {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not in enum"]
    return []


def test_everything_the_models_write_survives_the_crd_schema() -> None:
    from gpupool.core.model import parse_manifest
    from tests.unit.model.builders import claim_manifest, cluster_manifest, node_class_manifest, pool_manifest

    for manifest in (pool_manifest(), cluster_manifest(), claim_manifest(), node_class_manifest()):
        written = parse_manifest(manifest).to_manifest()
        schema = _schema(manifest["kind"])["schema"]["openAPIV3Schema"]
        body = {key: written[key] for key in ("spec", "status") if key in written}
        assert _pruned(body, schema, "") == [], manifest["kind"]
