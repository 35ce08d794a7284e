"""The chart's pod guard (templates/pod-guard.yaml), rendered and exercised: the ValidatingAdmissionPolicy
refuses a tenant's pod that arrives with or later gains scheduler-owned annotations, changes its
GPU-request annotations or enabled label after creation, or asks for GPU shares around
tensor-fusion-scheduler; the relay's own service account may write the scheduler-owned annotations.
Its key lists are the ones the product reads (`gpupool.scheduler.pod_record`).
"""

from __future__ import annotations

import ast
import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.scheduler.pod_record import FROZEN_LABELS, REQUEST_ANNOTATIONS, SCHEDULER_OWNED

helm = pytest.importorskip("helm_python")
pytest.importorskip("celpy")
sys.path.insert(0, str(Path(__file__).parent))
from admission_policy import evaluate  # noqa: E402

CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"
T = "tensor-fusion.ai/"
RELAY = "system:serviceaccount:gpupool-system:gp-scheduler"


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    text = rendered.get("gpupool/templates/pod-guard.yaml", "")
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    return next(
        d
        for d in render({})
        if d["kind"] == "ValidatingAdmissionPolicy" and d["metadata"]["name"] == "gp-pod-guard"
    )


def worker(annotations: dict[str, str] | None = None, *, enabled: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "w",
            "namespace": "tenant-b",
            "labels": {T + "enabled": "true"} if enabled else {},
            "annotations": {T + "tflops-limit": "10", T + "vram-limit": "4Gi", T + "qos": "medium"}
            | (annotations or {}),
        },
        "spec": {
            "schedulerName": "tensor-fusion-scheduler",
            "containers": [{"name": "c", "resources": {"limits": {T + "index_0": "1"}}}],
        },
    }


def changed(
    pod: dict[str, Any], *, annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    new = copy.deepcopy(pod)
    new["metadata"]["annotations"].update(annotations or {})
    new["metadata"]["labels"].update(labels or {})
    return new


def _cel_list(policy: dict[str, Any], name: str) -> tuple[str, ...]:
    expression = next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == name)
    return tuple(ast.literal_eval(" ".join(expression.split())))


def test_the_policy_is_bound_cluster_wide_and_lists_the_products_keys(policy: dict[str, Any]) -> None:
    binding = next(
        d
        for d in render({})
        if d["kind"] == "ValidatingAdmissionPolicyBinding" and d["metadata"]["name"] == "gp-pod-guard"
    )
    assert binding["spec"] == {
        "policyName": "gp-pod-guard",
        "validationActions": ["Deny"],
    }  # no matchResources
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert _cel_list(policy, "owned") == SCHEDULER_OWNED
    assert _cel_list(policy, "frozen") == REQUEST_ANNOTATIONS
    assert _cel_list(policy, "frozenLabels") == FROZEN_LABELS
    assert "matchConditions" not in policy["spec"]  # the relay's own writes are judged too
    is_relay = next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == "isRelay")
    assert RELAY in is_relay


def test_it_is_on_from_1_30_can_be_required_or_turned_off() -> None:
    assert render({"scheduler": {"podGuard": False}}) == []
    assert render({"scheduler": {"kubeVersion": "1.30.0"}})
    assert render({"scheduler": {"kubeVersion": "1.29.4"}}) == []  # auto: no ValidatingAdmissionPolicy v1
    with pytest.raises(helm.HelmError, match=r"scheduler\.podGuard=true needs Kubernetes >= 1\.30"):
        render({"scheduler": {"kubeVersion": "1.29.4", "podGuard": True}})


def test_a_tenant_cannot_create_a_pod_naming_gpus(policy: dict[str, Any]) -> None:
    forged = worker({T + "gpu-ids": "gpu-v0,gpu-v1,gpu-v2,gpu-v3", T + "qos": "critical"})
    assert "written by tensor-fusion-scheduler" in (evaluate(policy, operation="CREATE", obj=forged) or "")
    record = worker({"gpupool.io/allocation": '{"v":1}'}, enabled=False)
    assert evaluate(policy, operation="CREATE", obj=record) is not None
    assert evaluate(policy, operation="CREATE", obj=worker()) is None


def test_only_the_relay_writes_gpu_ids_after_creation(policy: dict[str, Any]) -> None:
    before = worker()
    after = changed(before, annotations={T + "gpu-ids": "gpu-v0", "gpupool.io/allocation": "{}"})
    assert evaluate(policy, operation="UPDATE", obj=after, old=before) is not None
    assert evaluate(policy, operation="UPDATE", obj=after, old=before, username=RELAY) is None
    moved = changed(after, annotations={T + "gpu-ids": "gpu-v1"})
    assert evaluate(policy, operation="UPDATE", obj=moved, old=after) is not None
    cleared = copy.deepcopy(after)
    del cleared["metadata"]["annotations"][T + "gpu-ids"]
    assert evaluate(policy, operation="UPDATE", obj=cleared, old=after) is not None


@pytest.mark.parametrize(
    "edit",
    [
        {T + "qos": "critical"},
        {T + "tflops-limit": "1000"},
        {T + "vram-limit": "80Gi"},
        {T + "dedicated-gpu": "true"},
    ],
)
def test_request_annotations_are_fixed_once_the_pod_exists(
    policy: dict[str, Any], edit: dict[str, str]
) -> None:
    before = worker()
    verdict = evaluate(policy, operation="UPDATE", obj=changed(before, annotations=edit), old=before)
    assert "fixed when it is created" in (verdict or "")


def test_other_edits_and_the_enabled_label(policy: dict[str, Any]) -> None:
    before = worker(enabled=False)
    assert (
        evaluate(policy, operation="UPDATE", obj=changed(before, annotations={"team": "x"}), old=before)
        is None
    )
    enabling = changed(before, labels={T + "enabled": "true"})
    assert "enabled label is fixed" in (evaluate(policy, operation="UPDATE", obj=enabling, old=before) or "")


def test_gpu_shares_are_placed_by_tensor_fusion_scheduler_only(policy: dict[str, Any]) -> None:
    preset = worker()
    preset["spec"]["nodeName"] = "gpu-node-7"
    assert "may not preset spec.nodeName" in (evaluate(policy, operation="CREATE", obj=preset) or "")
    default = worker()
    default["spec"]["schedulerName"] = "default-scheduler"
    assert evaluate(policy, operation="CREATE", obj=default) is not None
    init = worker()
    init["spec"]["containers"] = [{"name": "c"}]
    init["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {T + "index_3": "1"}}}]
    del init["spec"]["schedulerName"]
    assert evaluate(policy, operation="CREATE", obj=init) is not None
    plain = {"metadata": {"name": "nginx"}, "spec": {"nodeName": "n", "containers": [{"name": "nginx"}]}}
    assert evaluate(policy, operation="CREATE", obj=plain) is None


def test_deletes_are_not_judged(policy: dict[str, Any]) -> None:
    forged = worker({T + "gpu-ids": "gpu-v0"})
    assert evaluate(policy, operation="DELETE", obj=forged) is None
