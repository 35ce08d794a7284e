"""The webhook against a hostile tenant: AdmissionReviews with forged scheduler-owned annotations, a
preset node, a qos above the namespace's ceiling, or no VRAM limit are refused with the reason;
a GPUResourceQuota's `gpupool.io/max-qos` raises the ceiling; defaults are lowered to it.

Each refusal here was allowed before the tenant-isolation change (issue 22, Why 1).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.core.model.quota import GPUResourceQuota
from gpupool.scheduler.admission import AdmissionContext, Denial, PoolInfo, mutate_pod, parse_review
from gpupool.scheduler.admission.qos import qos_ceiling
from gpupool.scheduler.pod_record import ANNOTATION_ALLOCATION

T = "tensor-fusion.ai/"
CTX = AdmissionContext(pools={"shared": PoolInfo("shared")}, default_pool="shared")
SIZED = {T + "tflops-limit": "10", T + "vram-limit": "4Gi"}
VICTIMS = "gpu-victim-0,gpu-victim-1,gpu-victim-2,gpu-victim-3"


def review(annotations: dict[str, str], *, node: str | None = None, enabled: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "cuda"}]}
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "review-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": "tenant-b",
            "object": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "attacker",
                    "labels": {T + "enabled": "true" if enabled else "false"},
                    "annotations": annotations,
                },
                "spec": spec,
            },
        },
    }


def admit(body: dict[str, Any], ctx: AdmissionContext = CTX) -> dict[str, str]:
    request = parse_review(body)
    mutation = mutate_pod(request.pod, request.namespace, ctx)
    notes = dict(request.pod["metadata"]["annotations"])
    for op in mutation.patch:
        if op["path"].startswith("/metadata/annotations/"):
            notes[op["path"].removeprefix("/metadata/annotations/").replace("~1", "/")] = op["value"]
    return notes


def quota(annotations: dict[str, str] | None = None, spec: dict[str, Any] | None = None) -> GPUResourceQuota:
    return GPUResourceQuota.model_validate(
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUResourceQuota",
            "metadata": {"name": "q", "namespace": "tenant-b", "annotations": annotations or {}},
            "spec": spec or {},
        }
    )


def test_a_pod_naming_victim_gpus_with_critical_qos_is_refused() -> None:
    forged = {**SIZED, T + "gpu-ids": VICTIMS, T + "qos": "critical"}
    with pytest.raises(Denial, match=r"tensor-fusion\.ai/gpu-ids is written by tensor-fusion-scheduler"):
        admit(review(forged))


@pytest.mark.parametrize("enabled", [True, False])
def test_a_forged_allocation_record_is_refused_on_any_pod(enabled: bool) -> None:
    forged = {**SIZED, ANNOTATION_ALLOCATION: '{"v":1,"uid":"x","node":"n","gpus":["g"],"request":{}}'}
    progressive = AdmissionContext(pools=CTX.pools, default_pool="shared", progressive_migration=True)
    with pytest.raises(Denial, match=r"gpupool\.io/allocation is written by tensor-fusion-scheduler"):
        admit(review(forged, enabled=enabled), progressive)


def test_a_preset_node_is_refused_for_a_tensorfusion_pod() -> None:
    with pytest.raises(Denial, match=r"spec\.nodeName is preset to 'gpu-node-7'"):
        admit(review(SIZED, node="gpu-node-7"))


def test_critical_needs_the_namespace_ceiling_and_the_quota_grants_it() -> None:
    with pytest.raises(
        Denial, match=r"qos='critical' is above what namespace 'tenant-b' may ask for \('high'"
    ):
        admit(review({**SIZED, T + "qos": "critical"}))
    granted = AdmissionContext(
        pools=CTX.pools, default_pool="shared", quota=quota({"gpupool.io/max-qos": "critical"})
    )
    assert admit(review({**SIZED, T + "qos": "critical"}), granted)[T + "qos"] == "critical"
    low = AdmissionContext(pools=CTX.pools, default_pool="shared", quota=quota({"gpupool.io/max-qos": "low"}))
    with pytest.raises(Denial, match=r"qos='medium' is above"):
        admit(review({**SIZED, T + "qos": "medium"}), low)


def test_a_default_qos_above_the_ceiling_is_lowered_not_refused() -> None:
    low = AdmissionContext(pools=CTX.pools, default_pool="shared", quota=quota({"gpupool.io/max-qos": "low"}))
    assert admit(review(SIZED), low)[T + "qos"] == "low"  # request == limit would default to high


def test_an_unreadable_ceiling_grants_the_lowest_level() -> None:
    assert qos_ceiling(None) == "high"
    assert qos_ceiling(quota({"gpupool.io/max-qos": "platinum"})) == "low"
    assert qos_ceiling(quota({"gpupool.io/max-qos": "medium"})) == "medium"


def test_a_shared_worker_without_a_vram_limit_is_refused() -> None:
    with pytest.raises(Denial, match=r"pod asks for no VRAM: set tensor-fusion\.ai/vram-request\|limit"):
        admit(review({T + "tflops-limit": "10"}))


def test_the_quota_default_vram_holds_a_pod_that_sets_none() -> None:
    ctx = AdmissionContext(
        pools=CTX.pools,
        default_pool="shared",
        quota=quota(spec={"single": {"defaultLimits": {"vram": "2Gi"}}}),
    )
    got = admit(review({T + "tflops-limit": "10"}), ctx)
    assert (got[T + "vram-request"], got[T + "vram-limit"]) == ("2Gi", "2Gi")


def test_a_dedicated_worker_holds_whole_gpus_without_vram_annotations() -> None:
    assert admit(review({T + "dedicated-gpu": "true"}))[T + "dedicated-gpu"] == "true"
