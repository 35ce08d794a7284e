"""Pod intake: annotations and node constraints become a GpuRequest; gpu-ids become an Allocation."""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.core.allocator import GpuInfo, MatchExpression
from gpupool.core.allocator.pod_request import (
    ANNOTATION_GPU_IDS,
    RequestError,
    allocation_from_pod,
    request_from_pod,
)
from gpupool.core.model.foreign import Pod

T = "tensor-fusion.ai/"
GI = 1 << 30


def pod(annotations: dict[str, str], **spec: Any) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": "p", "namespace": "team", "uid": "u", "annotations": annotations},
            "spec": {"containers": [{"name": "c"}], **spec},
        }
    )


def test_units_and_defaults() -> None:
    request = request_from_pod(
        pod({T + "tflops-request": "12.5", T + "tflops-limit": "25", T + "vram-limit": "1.5Gi"}),
        default_pool="p",
    )
    assert (request.tflops_request, request.tflops_limit) == (12_500, 25_000)
    assert (request.vram_request, request.vram_limit) == (int(1.5 * GI), int(1.5 * GI))
    assert (request.pool, request.qos, request.isolation, request.gpu_count) == ("p", "medium", "soft", 1)
    assert request.key == "team/p" and request.uid == "u"


def test_model_vendor_indices_and_node_constraints() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]},
                ]
            }
        }
    }
    request = request_from_pod(
        pod(
            {
                T + "vram-request": "1Gi",
                T + "gpu-model": "H100",
                T + "vendor": "NVIDIA",
                T + "gpu-indices": "0, 3",
            },
            nodeSelector={"gpu": "yes"},
            affinity=affinity,
        )
    )
    assert (request.gpu_model, request.vendor, request.gpu_indices) == ("H100", "NVIDIA", frozenset({0, 3}))
    assert request.constraints.node_selector == (("gpu", "yes"),)
    first, second = request.constraints.required_terms
    assert first.match_expressions == (MatchExpression("zone", "In", ("z1", "z2")),)
    assert second.match_fields == (MatchExpression("metadata.name", "In", ("n9",)),)


def test_unreadable_affinity_is_an_error() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"operator": "In"}]}]
            }
        }
    }
    with pytest.raises(RequestError, match="has no key"):
        request_from_pod(pod({T + "vram-request": "1Gi"}, affinity=affinity))


def test_allocation_from_gpu_ids_with_compute_percent() -> None:
    gpus = {
        "g0": GpuInfo(name="g0", node="n", pool="p", tflops_capacity=100_000, vram_capacity=40 * GI),
        "g1": GpuInfo(name="g1", node="n", pool="p", tflops_capacity=200_000, vram_capacity=40 * GI),
    }
    annotations = {
        T + "compute-percent-request": "10",
        T + "compute-percent-limit": "20",
        T + "vram-request": "2Gi",
    }
    allocation = allocation_from_pod(pod({**annotations, ANNOTATION_GPU_IDS: "g0,g1,gone"}), gpus)
    assert allocation is not None
    assert allocation.gpus == ("g0", "g1") and allocation.node == "n"
    assert allocation.tflops_requests == (10_000, 20_000) and allocation.tflops_limits == (20_000, 40_000)
    assert allocation_from_pod(pod(annotations), gpus) is None
