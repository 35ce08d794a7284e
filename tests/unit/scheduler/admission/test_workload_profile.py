"""Pod webhook and WorkloadProfile: a pod naming a profile is admitted with the profile's wants,
the pod's own annotations win, and a missing profile is a denial that changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.core.allocator.pod_request import request_from_pod
from gpupool.core.model.foreign import Pod
from gpupool.core.model.registry import parse_as
from gpupool.core.model.workload import WorkloadProfile
from gpupool.scheduler.admission import AdmissionContext, Denial, PoolInfo, mutate_pod
from tests.unit.scheduler.admission.test_mutate import annotations_after, pod

T = "tensor-fusion.ai/"

PROFILE = parse_as(
    WorkloadProfile,
    {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "WorkloadProfile",
        "metadata": {"name": "inference", "namespace": "team"},
        "spec": {
            "poolName": "shared",
            "qos": "medium",
            "gpuCount": 2,
            "gpuModel": "L4",
            "isolation": "hard",
            "gangScheduling": {"minMembers": 4, "timeout": "2m"},
            "resources": {
                "requests": {"tflops": "10", "vram": "4Gi"},
                "limits": {"tflops": "20", "vram": "8Gi"},
            },
        },
    },
)
CTX = AdmissionContext(
    pools={"shared": PoolInfo("shared"), "other": PoolInfo("other")},
    default_pool="other",
    workload_profiles={"inference": PROFILE.spec},
)


def admitted(annotations: dict[str, str], ctx: AdmissionContext = CTX) -> dict[str, str]:
    return annotations_after(mutate_pod(pod(annotations), "team", ctx).patch, annotations)


def test_a_profile_pod_is_admitted_with_the_profiles_requests() -> None:
    result = admitted({T + "workload-profile": "inference"})
    assert result[T + "tflops-request"] == "10" and result[T + "tflops-limit"] == "20"
    assert result[T + "vram-request"] == "4Gi" and result[T + "vram-limit"] == "8Gi"
    assert result[T + "gpu-count"] == "2" and result[T + "gpu-model"] == "L4"
    assert result[T + "gpupool"] == "shared" and result[T + "qos"] == "medium"
    assert result[T + "isolation"] == "hard"
    assert (result[T + "gang-min-members"], result[T + "gang-timeout"]) == ("4", "2m")
    patched: dict[str, Any] = pod(result)
    request = request_from_pod(Pod.model_validate(patched), default_pool="other")
    assert (request.pool, request.gpu_count, request.isolation) == ("shared", 2, "hard")
    assert request.vram_request == 4 * 2**30 and request.vram_limit == 8 * 2**30


def test_the_pods_own_annotations_win_over_the_profile() -> None:
    result = admitted(
        {T + "workload-profile": "inference", T + "vram-request": "2Gi", T + "gpupool": "other"}
    )
    assert result[T + "vram-request"] == "2Gi"
    assert result[T + "gpupool"] == "other"
    assert result[T + "tflops-request"] == "10"


def test_without_profiles_the_same_pod_asks_for_no_gpu() -> None:
    with pytest.raises(Denial, match="no WorkloadProfile 'inference' in namespace 'team'"):
        admitted({T + "workload-profile": "inference"}, AdmissionContext(default_pool="other"))


def test_a_profile_without_isolation_leaves_the_webhook_default() -> None:
    bare = WorkloadProfile.model_validate(
        {"metadata": {"name": "bare"}, "spec": {"resources": {"requests": {"tflops": "1", "vram": "1Gi"}}}}
    )
    ctx = AdmissionContext(
        pools={"other": PoolInfo("other")}, default_pool="other", workload_profiles={"bare": bare.spec}
    )
    result = admitted({T + "workload-profile": "bare"}, ctx)
    assert result[T + "isolation"] == "soft"
    assert result[T + "tflops-limit"] == "1"
