"""The allocation record the relay writes at bind (`gpupool.io/allocation`): its wire form, what a
malformed one is refused with, and that quota usage counts the GPUs a pod holds, not its gpu-count."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpupool.core.allocator.pod_request import allocation_from_pod
from gpupool.core.allocator.quota import QuotaUsage
from gpupool.core.allocator.records import GpuInfo
from gpupool.core.model.foreign import Pod
from gpupool.scheduler.pod_record import (
    ANNOTATION_ALLOCATION,
    REQUEST_ANNOTATIONS,
    RecordError,
    record_annotations,
    recorded_allocation,
)

T = "tensor-fusion.ai/"
UID = "1a2b3c4d-5e6f-4a0b-8c9d-0e1f2a3b4c5d"


def pod(annotations: dict[str, str]) -> Pod:
    body: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "uid": UID, "annotations": annotations},
        "spec": {"nodeName": "n"},
    }
    return Pod.model_validate(body)


def test_the_record_names_the_pod_node_gpus_and_every_request_annotation_read() -> None:
    notes = record_annotations(
        pod({T + "tflops-limit": "20", T + "qos": "low", "team": "x"}), "n", ["gpu-a", "gpu-b"]
    )
    assert notes[T + "gpu-ids"] == "gpu-a,gpu-b"
    assert json.loads(notes[ANNOTATION_ALLOCATION]) == {
        "v": 1,
        "uid": UID,
        "node": "n",
        "gpus": ["gpu-a", "gpu-b"],
        "request": {T + "qos": "low", T + "tflops-limit": "20"},  # not the unrelated "team"
    }
    assert T + "gpu-ids" not in REQUEST_ANNOTATIONS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "is not JSON"),
        ('{"v": 2}', "is not a version 1 record"),
        ('{"v": 1, "uid": "u", "node": "n", "gpus": []}', "lacks uid, node or gpus"),
        ('{"v": 1, "uid": "u", "node": "n", "gpus": [""], "request": {}}', "malformed gpus or request"),
        ('{"v": 1, "uid": "u", "node": "n", "gpus": ["g"], "request": {"k": 1}}', "non-text request value"),
    ],
)
def test_a_malformed_record_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        recorded_allocation(pod({T + "gpu-ids": "g", ANNOTATION_ALLOCATION: text}), "n")


def test_an_added_request_annotation_disagrees_with_the_record() -> None:
    placed = pod({T + "tflops-limit": "20"})
    notes = {
        **placed.metadata.annotations,
        **record_annotations(placed, "n", ["g"]),
        T + "dedicated-gpu": "true",
    }
    with pytest.raises(RecordError, match=r"dedicated-gpu is 'true', the scheduler placed it with None"):
        recorded_allocation(pod(notes), "n")


def test_quota_usage_counts_the_gpus_a_pod_holds_not_its_gpu_count() -> None:
    gpus = {
        f"g{i}": GpuInfo(f"g{i}", "n", "pool", tflops_capacity=100_000, vram_capacity=2**34) for i in range(4)
    }
    held = allocation_from_pod(
        pod(
            {
                T + "gpu-ids": "g0,g1,g2,g3",
                T + "gpu-count": "1",
                T + "tflops-request": "10",
                T + "vram-request": "1Gi",
            }
        ),
        gpus,
    )
    assert held is not None
    usage = QuotaUsage()
    usage.add(held)
    assert (usage.tflops_requests, usage.vram_requests, usage.workers) == (40_000, 4 * 2**30, 1)
