"""Pod webhook: every annotation's default and validation, quota, enabled-replicas, progressive migration."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from gpupool.core.allocator.quota import QuotaUsage
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.scheduler.admission import (
    AdmissionContext,
    Denial,
    PoolInfo,
    ReviewError,
    allowed,
    denied,
    mutate_pod,
    parse_review,
)
from gpupool.scheduler.admission.review import pointer

T = "tensor-fusion.ai/"
CTX = AdmissionContext(pools={"shared": PoolInfo("shared", default_qos="low")}, default_pool="shared")


def pod(annotations: dict[str, str] | None = None, *, enabled: bool = True, gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "cuda"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus), "cpu": "1"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "team",
            "labels": {T + "enabled": "true" if enabled else "false"},
            "annotations": dict(annotations or {}),
        },
        "spec": {"containers": [container]},
    }


def annotations_after(ops: list[dict[str, Any]], start: dict[str, str]) -> dict[str, str]:
    result = dict(start)
    for op in ops:
        if op["path"].startswith("/metadata/annotations/"):
            key = op["path"].removeprefix("/metadata/annotations/").replace("~1", "/").replace("~0", "~")
            result[key] = op["value"]
        elif op["path"] == "/metadata/annotations":
            result = dict(op["value"])
    return result


def mutate(annotations: dict[str, str], ctx: AdmissionContext = CTX, **kw: Any) -> dict[str, str]:
    return annotations_after(mutate_pod(pod(annotations, **kw), "team", ctx).patch, annotations)


BASE = {T + "tflops-limit": "100", T + "vram-limit": "16Gi"}


def test_request_defaults_to_limit_and_qos_high_when_equal() -> None:
    got = mutate(BASE)
    assert got[T + "tflops-request"] == "100" and got[T + "vram-request"] == "16Gi"
    assert got[T + "qos"] == "high"
    assert got[T + "gpupool"] == "shared"
    assert got[T + "isolation"] == "soft"


def test_qos_falls_back_to_pool_default_then_medium() -> None:
    burst = {**BASE, T + "tflops-request": "50"}
    assert mutate(burst)[T + "qos"] == "low"
    no_default = AdmissionContext(pools={"shared": PoolInfo("shared")}, default_pool="shared")
    assert mutate(burst, no_default)[T + "qos"] == "medium"
    assert mutate({**burst, T + "qos": "high"})[T + "qos"] == "high"  # explicit, within the ceiling


def test_explicit_pool_and_isolation_are_kept() -> None:
    ctx = AdmissionContext(
        pools={"shared": PoolInfo("shared"), "gold": PoolInfo("gold")}, default_pool="shared"
    )
    got = mutate({**BASE, T + "gpupool": "gold", T + "isolation": "hard"}, ctx)
    assert (got[T + "gpupool"], got[T + "isolation"]) == ("gold", "hard")


def test_compute_percent_instead_of_tflops() -> None:
    got = mutate({T + "compute-percent-limit": "50", T + "vram-limit": "8Gi"})
    assert got[T + "compute-percent-request"] == "50"


def test_schedulername_index_resource_and_native_gpu_removed() -> None:
    ops = mutate_pod(pod(BASE, gpus=2), "team", CTX).patch
    paths = {op["path"]: op for op in ops}
    assert paths["/spec/schedulerName"]["value"] == "tensor-fusion-scheduler"
    assert paths["/spec/containers/0/resources/limits/nvidia.com~1gpu"]["op"] == "remove"
    assert paths["/spec/containers/0/resources/limits/tensor-fusion.ai~1index_0"]["value"] == "1"
    assert annotations_after(ops, BASE)[T + "gpu-count"] == "2"


def test_dedicated_gpu_pod_needs_no_size_annotations() -> None:
    got = mutate({T + "dedicated-gpu": "true"})
    assert got[T + "dedicated-gpu"] == "true" and got[T + "gpupool"] == "shared"
    assert T + "tflops-request" not in got and T + "compute-percent-request" not in got


def test_native_gpu_only_pod_becomes_whole_gpus() -> None:
    got = annotations_after(mutate_pod(pod({}, gpus=1), "team", CTX).patch, {})
    assert got[T + "compute-percent-request"] == "100" and got[T + "gpu-count"] == "1"
    assert got[T + "dedicated-gpu"] == "true"  # whole GPUs: no tenant shares them, VRAM included


BAD = [
    ({T + "tflops-limit": "lots", T + "vram-limit": "1Gi"}, "tflops-limit='lots' is not a quantity"),
    ({T + "tflops-limit": "-5", T + "vram-limit": "1Gi"}, "must not be negative"),
    ({**BASE, T + "vram-request": "32Gi"}, "vram-limit 16Gi is below vram-request 32Gi"),
    ({**BASE, T + "tflops-request": "200"}, "tflops-limit 100 is below tflops-request 200"),
    ({**BASE, T + "compute-percent-limit": "50"}, "not both"),
    ({T + "compute-percent-limit": "150", T + "vram-limit": "1Gi"}, "percentage in (0, 100]"),
    ({**BASE, T + "gpu-count": "0"}, "gpu-count='0' must be between 1 and 128"),
    ({**BASE, T + "gpu-count": "129"}, "must be between 1 and 128"),
    ({**BASE, T + "gpu-count": "two"}, "is not a whole number"),
    ({**BASE, T + "qos": "urgent"}, "qos='urgent' must be one of low, medium, high, critical"),
    ({**BASE, T + "isolation": "strict"}, "must be one of shared, soft, hard, partitioned"),
    ({**BASE, T + "dedicated-gpu": "yes"}, "dedicated-gpu='yes' must be true or false"),
    ({**BASE, T + "gpupool": "ghost"}, "GPU pool 'ghost' does not exist"),
    ({**BASE, T + "gpu-indices": "a,b"}, "gpu-indices='a' is not a whole number"),
    ({**BASE, T + "enabled-replicas": "x"}, "enabled-replicas='x' is not a whole number"),
    ({**BASE, T + "enabled-replicas": "-1"}, "must not be negative"),
    ({}, "asks for no GPU"),
]


@pytest.mark.parametrize(("annotations", "message"), BAD)
def test_bad_values_are_denied_with_the_reason(annotations: dict[str, str], message: str) -> None:
    with pytest.raises(Denial) as caught:
        mutate_pod(pod(annotations), "team", CTX)
    assert message in str(caught.value)


def test_no_default_pool_is_a_clear_denial() -> None:
    with pytest.raises(Denial, match=r"no tensor-fusion\.ai/gpupool annotation and no default GPU pool"):
        mutate_pod(pod(BASE), "team", AdmissionContext())


def quota(spec: dict[str, Any]) -> GPUResourceQuota:
    return GPUResourceQuota.model_validate(
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUResourceQuota",
            "metadata": {"name": "q", "namespace": "team"},
            "spec": spec,
        }
    )


def test_quota_defaults_fill_missing_resources() -> None:
    ctx = AdmissionContext(
        pools=CTX.pools,
        default_pool="shared",
        quota=quota(
            {
                "single": {
                    "defaultRequests": {"tflops": "10", "vram": "2Gi"},
                    "defaultLimits": {"tflops": "20", "vram": "2Gi"},
                }
            }
        ),
    )
    got = mutate({}, ctx)
    assert (got[T + "tflops-request"], got[T + "tflops-limit"], got[T + "vram-request"]) == (
        "10",
        "20",
        "2Gi",
    )


def test_over_quota_is_denied_and_says_which_total() -> None:
    ctx = AdmissionContext(
        pools=CTX.pools,
        default_pool="shared",
        quota=quota({"total": {"requests": {"tflops": "150", "vram": "1Ti"}}}),
        quota_usage=QuotaUsage(tflops_requests=100_000),
    )
    # The pod's own amount and the bound; not the 100 TFLOPS the namespace already uses.
    with pytest.raises(
        Denial,
        match=r"this pod's requests\.tflops 100 TFLOPS does not fit in what is left of the quota's "
        r"total 150 TFLOPS",
    ) as refused:
        mutate_pod(pod(BASE), "team", ctx)
    assert "200" not in str(refused.value)
    single = AdmissionContext(
        pools=CTX.pools, default_pool="shared", quota=quota({"single": {"maxGPUCount": 1}})
    )
    with pytest.raises(Denial, match=r"above single\.maxGPUCount 1"):
        mutate_pod(pod({**BASE, T + "gpu-count": "2"}), "team", single)


def test_enabled_replicas_moves_only_that_many() -> None:
    annotations = {**BASE, T + "enabled-replicas": "3"}
    moved = mutate_pod(
        pod(annotations, gpus=1), "team", AdmissionContext(default_pool="shared", migrated_replicas=2)
    )
    assert any(op["path"] == "/spec/schedulerName" for op in moved.patch)
    stays = mutate_pod(
        pod(annotations, gpus=1), "team", AdmissionContext(default_pool="shared", migrated_replicas=3)
    )
    assert stays.patch == [] and "keeps nvidia.com/gpu" in stays.notes[0]


def test_disabled_pods_are_untouched_unless_progressive_migration_routes_native_gpu() -> None:
    assert mutate_pod(pod(BASE, enabled=False, gpus=1), "team", CTX).patch == []
    ctx = AdmissionContext(default_pool="shared", progressive_migration=True)
    ops = mutate_pod(pod({}, enabled=False, gpus=1), "team", ctx).patch
    assert {"op": "add", "path": "/spec/schedulerName", "value": "tensor-fusion-scheduler"} in ops
    assert not any(op["op"] == "remove" for op in ops)
    assert mutate_pod(pod({}, enabled=False), "team", ctx).patch == []


USED_BY_TOLERATION = {"key": "tensor-fusion.ai/used-by", "operator": "Exists", "effect": "PreferNoSchedule"}


def test_progressive_migration_makes_workers_tolerate_the_used_by_taint() -> None:
    ctx = AdmissionContext(default_pool="shared", progressive_migration=True)
    ops = mutate_pod(pod(BASE), "team", ctx).patch
    assert {"op": "add", "path": "/spec/tolerations", "value": [USED_BY_TOLERATION]} in ops
    with_one = pod(BASE)
    with_one["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    ops = mutate_pod(with_one, "team", ctx).patch
    assert {"op": "add", "path": "/spec/tolerations/-", "value": USED_BY_TOLERATION} in ops
    with_ours = pod(BASE)
    with_ours["spec"]["tolerations"] = [USED_BY_TOLERATION]
    assert not any("tolerations" in op["path"] for op in mutate_pod(with_ours, "team", ctx).patch)
    assert not any("tolerations" in op["path"] for op in mutate_pod(pod(BASE), "team", CTX).patch)
    native = mutate_pod(pod({}, enabled=False, gpus=1), "team", ctx).patch
    assert not any("tolerations" in op["path"] for op in native)  # native pods must feel the taint


def test_review_envelopes_round_trip() -> None:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"kind": "Pod"},
            "operation": "CREATE",
            "namespace": "team",
            "object": pod(BASE),
        },
    }
    request = parse_review(review)
    assert (request.uid, request.namespace) == ("u1", "team")
    answer = allowed("u1", [{"op": "add", "path": "/x", "value": 1}])
    assert answer["response"]["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(answer["response"]["patch"])) == [
        {"op": "add", "path": "/x", "value": 1}
    ]
    refusal = denied("u1", "why")["response"]
    assert refusal == {"uid": "u1", "allowed": False, "status": {"code": 403, "message": "why"}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "not an AdmissionReview"),
        ({"kind": "AdmissionReview"}, "no request.uid"),
        ({"kind": "AdmissionReview", "request": {"uid": "u"}}, "has no object"),
        (
            {"kind": "AdmissionReview", "request": {"uid": "u", "object": {}, "kind": {"kind": "Node"}}},
            "not Node",
        ),
    ],
)
def test_malformed_reviews_are_refused_with_the_reason(body: object, message: str) -> None:
    with pytest.raises(ReviewError, match=message):
        parse_review(body)


def test_json_pointer_escapes_slash_and_tilde() -> None:
    assert (
        pointer("metadata", "annotations", "tensor-fusion.ai/a~b")
        == "/metadata/annotations/tensor-fusion.ai~1a~0b"
    )
