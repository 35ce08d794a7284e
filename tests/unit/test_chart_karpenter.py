"""The chart's Karpenter pieces: the functions' ClusterRole on NodeClaims / NodePools / node
classes (bound to the functions' subjects, the same list as their other roles:
test_chart_consistency.py), and the NodeOverlay declaring the sixteen tensor-fusion.ai/index_<hex>
resources, rendered only when asked (its CRD may be absent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    return next((o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name), None)


def test_by_default_the_role_is_bound_to_the_functions_group_and_no_nodeoverlay() -> None:
    objects = render({})
    role = by_kind(objects, "ClusterRole", "gp-functions-karpenter")
    assert role is not None
    rules = {(r["apiGroups"][0], r["resources"][0]): set(r["verbs"]) for r in role["rules"]}
    assert rules == {
        ("karpenter.sh", "nodeclaims"): {"get", "list", "watch", "create", "delete"},
        ("karpenter.sh", "nodepools"): {"get", "list", "watch"},
        ("karpenter.k8s.aws", "ec2nodeclasses"): {"get", "list"},
    }
    binding = by_kind(objects, "ClusterRoleBinding", "gp-functions-karpenter")
    assert binding is not None and binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpupool"}
    ]
    assert not [o for o in objects if o["kind"] == "NodeOverlay"]


def test_the_role_binds_the_functions_subjects_and_can_be_left_out() -> None:
    subject = {"kind": "User", "name": "gpupool-functions", "apiGroup": "rbac.authorization.k8s.io"}
    binding = by_kind(
        render({"functionsRbac": {"group": "gpu-functions", "subjects": [subject]}}),
        "ClusterRoleBinding",
        "gp-functions-karpenter",
    )
    group = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpu-functions"}
    assert binding is not None and binding["subjects"] == [group, subject]
    assert binding["roleRef"]["name"] == "gp-functions-karpenter"
    left_out = render({"karpenter": {"rbac": {"enabled": False}}})
    assert by_kind(left_out, "ClusterRole", "gp-functions-karpenter") is None
    assert by_kind(left_out, "ClusterRoleBinding", "gp-functions-karpenter") is None


def test_nodeoverlay_declares_the_sixteen_index_buckets_when_enabled() -> None:
    overlay = by_kind(
        render({"karpenter": {"nodeOverlay": {"enabled": True}}}), "NodeOverlay", "gp-tensor-fusion-indices"
    )
    assert overlay is not None and overlay["apiVersion"] == "karpenter.sh/v1alpha1"
    expected = {f"tensor-fusion.ai/index_{i:x}": "36" for i in range(16)}
    assert overlay["spec"]["capacity"] == expected
    assert overlay["spec"]["requirements"] == [] and overlay["spec"]["weight"] == 10
