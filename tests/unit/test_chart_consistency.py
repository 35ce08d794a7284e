"""The chart as shipped agrees with itself and with template.yaml: every role of the functions (their
ClusterRole, their Lease Role, the Karpenter ClusterRole) is bound to one list of subjects, that list
starts with the group the stack maps the functions' IAM roles to, the retired
`karpenter.functionSubjects` is refused with its replacement named, the optional ServiceAccount for a
kubeconfig gets a token Secret and mounts nowhere, bad subjects are refused by the schema, and
`agent.runtimeClassName: ""` means the node's default runtime as values.yaml says; and the
default kube-scheduler image follows the cluster's version only inside Chart.yaml's kubeVersion range
(every minor of which has Kubernetes schemas to validate against), refusing any other version.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from cfnlint.decode import decode  # type: ignore[import-untyped]
from kubernetes_validate.utils import all_versions

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "incluster" / "chart"
FUNCTION_ROLES = {
    ("ClusterRoleBinding", "gp-functions"),
    ("RoleBinding", "gp-functions-leases"),
    ("ClusterRoleBinding", "gp-functions-karpenter"),
}
GROUP = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpupool"}


def _render(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


def _bindings(docs: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, str]]]:
    return {
        (d["kind"], d["metadata"]["name"]): d["subjects"]
        for d in docs
        if (d["kind"], d["metadata"]["name"]) in FUNCTION_ROLES
    }


def _range() -> tuple[int, int]:
    """(first minor, first minor past the range) of Chart.yaml's `>=1.A.0-0 <1.B.0-0`, read here."""
    constraint = yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"]
    found = re.fullmatch(r">=1\.(\d+)\.0-0 <1\.(\d+)\.0-0", constraint)
    assert found, constraint
    return int(found.group(1)), int(found.group(2))


def _scheduler_image(values: dict[str, Any]) -> str:
    (deployment,) = [d for d in _render(values) if d["kind"] == "Deployment"]
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] != "relay"]
    image: str = container["image"]
    return image


USER = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "gpupool-functions"}
SERVICE_ACCOUNT = {"kind": "ServiceAccount", "name": "gp-functions", "namespace": "gpupool-system"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, [GROUP]),
        ({"functionsRbac": {"group": "gpu-functions"}}, [{**GROUP, "name": "gpu-functions"}]),
        ({"functionsRbac": {"serviceAccount": {"create": True}}}, [GROUP, SERVICE_ACCOUNT]),
        ({"functionsRbac": {"subjects": [USER]}}, [GROUP, USER]),
    ],
    ids=["defaults", "another-group", "service-account", "extra-subjects"],
)
def test_every_role_of_the_functions_is_bound_to_the_same_subjects(
    values: dict[str, Any], expected: list[dict[str, str]]
) -> None:
    bindings = _bindings(_render(values))
    assert set(bindings) == FUNCTION_ROLES
    for where, subjects in bindings.items():
        assert subjects == expected, where


def test_the_functions_group_is_the_one_the_stack_maps_their_roles_to() -> None:
    template, _ = decode(str(ROOT / "template.yaml"))
    stack_group = template["Parameters"]["FunctionsKubernetesGroup"]["Default"]
    chart_group = yaml.safe_load((CHART / "values.yaml").read_text())["functionsRbac"]["group"]
    assert stack_group == chart_group == "gpupool"


def test_the_karpenter_role_stays_bound_when_the_functions_own_roles_are_off() -> None:
    bindings = _bindings(_render({"functionsRbac": {"enabled": False}}))
    assert bindings == {("ClusterRoleBinding", "gp-functions-karpenter"): [GROUP]}


def test_karpenter_function_subjects_is_refused_naming_its_replacement() -> None:
    with pytest.raises(helm.HelmError, match=r"functionsRbac\.subjects"):
        _render({"karpenter": {"functionSubjects": [USER]}})


def test_the_functions_service_account_has_a_token_secret_and_mounts_nowhere() -> None:
    docs = _render({"functionsRbac": {"serviceAccount": {"create": True}}})
    (account,) = [
        d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == "gp-functions"
    ]
    assert account["automountServiceAccountToken"] is False
    (token,) = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == "gp-functions-token"]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "gp-functions"}
    pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] in ("Deployment", "DaemonSet")]
    assert all(pod["serviceAccountName"] != "gp-functions" for pod in pods)
    assert not [d for d in _render({}) if d["metadata"]["name"].startswith("gp-functions-token")]


@pytest.mark.parametrize(
    "bad",
    [
        {"functionsRbac": {"group": "system:masters"}},
        {"functionsRbac": {"subjects": [{"kind": "ServiceAccount", "name": "x"}]}},
        {"functionsRbac": {"subjects": [{"kind": "Robot", "name": "x"}]}},
        {"functionsRbac": {"subjects": [{**USER, "verbs": ["*"]}]}},
        {"functionsRbac": {"serviceAccount": {"name": "other"}}},
        {"viewer": {"subjects": [{"kind": "Group"}]}},
        {"image": {"repository": "ghcr.io/gpupool/relay:latest"}},
        {"image": {"tag": "bad tag"}},
    ],
    ids=[
        "system-group",
        "sa-without-namespace",
        "unknown-kind",
        "unknown-key",
        "sa-name",
        "viewer-without-name",
        "tag-in-repository",
        "bad-tag",
    ],
)
def test_the_schema_refuses_bad_subjects_groups_and_images(bad: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        _render(bad)


def test_every_minor_in_the_charts_range_has_kubernetes_schemas() -> None:
    first, past = _range()
    supported = {tuple(int(part) for part in v.split(".")[:2]) for v in all_versions()}
    assert {(1, minor) for minor in range(first, past)} <= supported


@pytest.mark.parametrize("outside", ["below", "above"])
def test_a_cluster_version_outside_the_range_is_refused_unless_an_image_is_pinned(outside: str) -> None:
    first, past = _range()
    version = f"1.{first - 1}.9" if outside == "below" else f"1.{past}.0"
    with pytest.raises(helm.HelmError, match="outside this chart's kubeVersion"):
        _render({"scheduler": {"kubeVersion": version}})
    pinned = {"scheduler": {"kubeVersion": version, "kubeSchedulerImage": "mirror/kube-scheduler:v1.31.4"}}
    assert _scheduler_image(pinned) == "mirror/kube-scheduler:v1.31.4"


def test_an_offline_render_picks_a_version_inside_the_range() -> None:
    image = _scheduler_image({})
    found = re.fullmatch(r"registry\.k8s\.io/kube-scheduler:v1\.(\d+)\.\d+", image)
    assert found, image
    first, past = _range()
    assert first <= int(found.group(1)) < past


def test_the_relay_and_the_agent_default_to_one_image_at_the_charts_app_version() -> None:
    docs = _render({})
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    images = {
        c["image"]
        for d in docs
        if d["kind"] in ("Deployment", "DaemonSet")
        for c in d["spec"]["template"]["spec"]["containers"]
        if c["name"] in ("relay", "agent")
    }
    assert images == {f"ghcr.io/gpupool/relay:{app_version}"}
    tagged = _render(
        {
            "image": {
                "repository": "123456789012.dkr.ecr.us-east-1.amazonaws.com/gpupool/relay",
                "tag": "0.1.0-rc1",
            }
        }
    )
    assert {
        c["image"]
        for d in tagged
        if d["kind"] in ("Deployment", "DaemonSet")
        for c in d["spec"]["template"]["spec"]["containers"]
        if c["name"] in ("relay", "agent")
    } == {"123456789012.dkr.ecr.us-east-1.amazonaws.com/gpupool/relay:0.1.0-rc1"}


@pytest.mark.parametrize(
    ("values", "expected"), [({}, "nvidia"), ({"agent": {"runtimeClassName": ""}}, None)]
)
def test_the_agents_runtime_class_is_the_value_given_and_empty_means_the_nodes_default(
    values: dict[str, Any], expected: str | None
) -> None:
    (daemonset,) = [d for d in _render(values) if d["kind"] == "DaemonSet"]
    assert daemonset["spec"]["template"]["spec"].get("runtimeClassName") == expected
