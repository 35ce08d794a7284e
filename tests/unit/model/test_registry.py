"""The manifest loader: model chosen by apiVersion+kind, errors as `path: reason`, YAML errors with a line."""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.core.model import (
    GPUPool,
    KarpenterNodeClaim,
    ManifestError,
    Node,
    Pod,
    load_documents,
    load_manifests,
    parse_as,
    parse_manifest,
)
from gpupool.core.model.registry import describe, is_shallow_kind, model_for


@pytest.mark.parametrize(
    ("api_version", "kind", "model"),
    [
        ("tensor-fusion.ai/v1", "GPUPool", GPUPool),
        ("v1", "Node", Node),
        ("v1", "Pod", Pod),
        ("karpenter.sh/v1", "NodeClaim", KarpenterNodeClaim),
        ("tensor-fusion.ai/v2", "GPUPool", None),
        ("v1", "GPUPool", None),
    ],
)
def test_model_is_chosen_by_api_version_and_kind(
    api_version: str, kind: str, model: type[Any] | None
) -> None:
    assert model_for(api_version, kind) is model


def test_unknown_kind_is_an_error_naming_it() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert caught.value.what == "Widget/w"
    assert [str(e) for e in caught.value.errors] == ["kind: unknown kind 'Widget' in 'example.com/v1'"]


def test_missing_api_version_and_kind_are_both_reported() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest({"metadata": {}})
    assert [e.path for e in caught.value.errors] == ["apiVersion", "kind"]


def test_wrong_shape_is_reported_plainly() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(
            {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool", "spec": {"capacityConfig": [1]}}
        )
    assert [str(e) for e in caught.value.errors] == ["spec.capacityConfig: expected a mapping, got list"]


def test_non_mapping_document_is_an_error() -> None:
    with pytest.raises(ManifestError, match="not a mapping"):
        parse_manifest(["a"])  # type: ignore[arg-type]


def test_every_invalid_field_is_listed() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(
            {
                "apiVersion": "tensor-fusion.ai/v1",
                "kind": "GPUPool",
                "metadata": {"name": "p"},
                "spec": {
                    "capacityConfig": {"minResources": {"tflops": "abc", "vram": "1x"}},
                    "nodeManagerConfig": {"provisioningMode": "Sometimes"},
                },
            }
        )
    paths = [e.path for e in caught.value.errors]
    assert paths == [
        "spec.capacityConfig.minResources.tflops",
        "spec.capacityConfig.minResources.vram",
        "spec.nodeManagerConfig.provisioningMode",
    ]
    assert str(caught.value).startswith(
        "GPUPool/p: spec.capacityConfig.minResources.tflops: not a quantity: 'abc'"
    )


def test_foreign_envelopes_ignore_fields_they_do_not_name() -> None:
    node = parse_manifest(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"tensor-fusion.ai/node-provisioner": "claim-1"}},
            "spec": {"providerID": "aws:///us-east-1a/i-1", "podCIDR": "10.0.0.0/24"},
            "status": {
                "capacity": {"nvidia.com/gpu": "4", "memory": "64Gi"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "daemonEndpoints": {},
            },
        }
    )
    assert isinstance(node, Node)
    assert node.spec.provider_id == "aws:///us-east-1a/i-1"
    assert node.status.capacity["nvidia.com/gpu"] == 4
    assert node.is_ready()


def test_load_manifests_reads_every_document() -> None:
    text = (
        "apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata: {name: a}\n---\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ns}\n"
    )
    objects = load_manifests(text)
    assert [(type(o).__name__, o.name) for o in objects] == [("GPUPool", "a"), ("Pod", "b")]


def test_yaml_error_names_the_line() -> None:
    with pytest.raises(ManifestError) as caught:
        load_documents("apiVersion: v1\nkind: [Pod\nmetadata: {}\n")
    assert "invalid YAML: line" in str(caught.value)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"kind": "GPUPool", "metadata": {"name": "p"}}, "GPUPool/p"),
        ({"kind": "Deployment"}, "Deployment/<unnamed>"),
        ({"metadata": {"name": "x"}}, "<no kind>/x"),
    ],
)
def test_describe(document: dict[str, Any], expected: str) -> None:
    assert describe(document) == expected


def test_shallow_kinds() -> None:
    assert is_shallow_kind("apps/v1", "Deployment")
    assert is_shallow_kind("karpenter.k8s.aws/v1", "EC2NodeClass")
    assert is_shallow_kind("v1", "Pod")
    assert not is_shallow_kind("tensor-fusion.ai/v1", "GPUPool")
    assert not is_shallow_kind("example.com/v1", "Widget")


def test_parse_as_returns_the_requested_kind_or_says_which_it_got() -> None:
    manifest = {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool", "metadata": {"name": "p"}}
    assert parse_as(GPUPool, manifest).name == "p"
    with pytest.raises(ManifestError, match="kind: expected Node, got GPUPool"):
        parse_as(Node, manifest)
    with pytest.raises(ManifestError, match=r"spec\.colour: unknown field"):
        parse_as(GPUPool, {**manifest, "spec": {"colour": "red"}})
