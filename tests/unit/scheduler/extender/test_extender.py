"""Extender: kube-scheduler JSON shapes round-trip; filter, prioritize and bind reservations."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpupool.core.allocator import AllocationError, Allocator, GpuInfo, GpuRequest
from gpupool.core.allocator.pod_request import RequestError
from gpupool.scheduler.extender import (
    binding_result,
    handle_filter,
    handle_prioritize,
    parse_binding_args,
    parse_extender_args,
    reserve_for_bind,
)
from gpupool.scheduler.extender.wire import WireError

GI = 1 << 30
T = "tensor-fusion.ai/"


def allocator() -> Allocator:
    built = Allocator()
    for node, free in (("a", 50_000), ("b", 5_000)):
        built.state.upsert_gpu(
            GpuInfo(
                name=f"{node}-0",
                node=node,
                pool="shared",
                tflops_capacity=100_000,
                vram_capacity=40 * GI,
                tflops_available=free,
            )
        )
    return built


def pod(name: str = "p", annotations: dict[str, str] | None = None, gpus: int = 0) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "uid": f"uid-{name}",
            "annotations": annotations or {},
            # a pod asking gpupool for GPUs is labelled (core.vocabulary.pods.asks_gpupool_for_gpus)
            "labels": {"tensor-fusion.ai/enabled": "true"} if annotations else {},
        },
        "spec": {"containers": [{"name": "c", "resources": resources}]},
    }


TF = {T + "tflops-request": "10", T + "vram-request": "4Gi", T + "gpupool": "shared"}


def test_filter_round_trip_in_kube_scheduler_shapes() -> None:
    body = json.loads(json.dumps({"Pod": pod(annotations=TF), "Nodes": None, "NodeNames": ["a", "b", "cpu"]}))
    answer = handle_filter(allocator(), parse_extender_args(body), default_pool="shared")
    assert set(answer) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert answer["NodeNames"] == ["a"]
    assert answer["FailedNodes"]["b"].startswith("resources: b-0: free 5 TFLOPS")
    assert "no GPU managed by gpupool" in answer["FailedNodes"]["cpu"]
    assert answer["Error"] == "" and answer["Nodes"] is None
    json.dumps(answer)


def test_filter_accepts_lower_case_keys_and_full_node_lists() -> None:
    nodes = {"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}
    args = parse_extender_args({"pod": pod(annotations=TF), "nodes": nodes})
    answer = handle_filter(allocator(), args, default_pool="shared")
    assert [i["metadata"]["name"] for i in answer["Nodes"]["items"]] == ["a"]
    assert answer["NodeNames"] is None


def test_bad_annotations_fail_every_node_as_unresolvable() -> None:
    args = parse_extender_args({"Pod": pod(annotations={T + "tflops-request": "x"}), "NodeNames": ["a"]})
    answer = handle_filter(allocator(), args, default_pool="shared")
    assert answer["NodeNames"] == []
    assert "not a quantity" in answer["FailedAndUnresolvableNodes"]["a"]


def test_pods_without_gpus_pass_and_native_pods_avoid_tensorfusion_nodes() -> None:
    built = allocator()
    assert handle_filter(
        built, parse_extender_args({"Pod": pod(), "NodeNames": ["a", "b"]}), default_pool=""
    )["NodeNames"] == ["a", "b"]
    built.reserve(GpuRequest(namespace="team", name="w", pool="shared", tflops_request=1_000), "a")
    native = handle_filter(
        built, parse_extender_args({"Pod": pod(gpus=1), "NodeNames": ["a", "b"]}), default_pool=""
    )
    assert native["NodeNames"] == ["b"]
    assert "progressive migration" in native["FailedNodes"]["a"]


def test_prioritize_returns_host_priority_list() -> None:
    answer = handle_prioritize(
        allocator(),
        parse_extender_args({"Pod": pod(annotations=TF), "NodeNames": ["a", "b"]}),
        default_pool="",
    )
    # a: 50 % of TFLOPS used → 0.3 · 50 = 15 (NodeCompactGPULowLoad scores nodes by use) → 2 of 10.
    assert answer == [{"Host": "a", "Score": 2}, {"Host": "b", "Score": 0}]


def test_binding_args_and_result_shapes() -> None:
    args = parse_binding_args({"PodName": "p", "PodNamespace": "team", "PodUID": "u", "Node": "a"})
    assert (args.pod_name, args.pod_namespace, args.pod_uid, args.node) == ("p", "team", "u", "a")
    assert binding_result() == {"Error": ""}
    with pytest.raises(WireError, match="missing node"):
        parse_binding_args({"PodName": "p", "PodNamespace": "team"})
    with pytest.raises(WireError, match="Pod is missing"):
        parse_extender_args({"NodeNames": []})


def test_bind_reserves_once_and_a_losing_concurrent_bind_fails_cleanly() -> None:
    built = Allocator()
    built.state.upsert_gpu(
        GpuInfo(name="a-0", node="a", pool="shared", tflops_capacity=15_000, vram_capacity=GI * 40)
    )
    first = reserve_for_bind(built, pod("p1", TF), "a", default_pool="shared")
    assert first is not None and first.gpus == ("a-0",)
    assert reserve_for_bind(built, pod("p1", TF), "a", default_pool="shared") == first
    with pytest.raises(AllocationError, match="no longer fits node a"):
        reserve_for_bind(built, pod("p2", TF), "a", default_pool="shared")
    assert list(built.state.allocations) == ["team/p1"]
    # A pod that asks for no GPUs is never bound by the extender: it would hold no record.
    with pytest.raises(RequestError, match="does not ask gpupool for GPUs"):
        reserve_for_bind(built, pod("plain"), "a", default_pool="shared")
    assert reserve_for_bind(built, pod("native", gpus=1), "a", default_pool="shared") is None


def test_replicas_left_on_nvidia_gpu_are_native_even_with_annotations() -> None:
    built = allocator()
    built.reserve(GpuRequest(namespace="team", name="w", pool="shared", tflops_request=1_000), "a")
    left_behind = pod("r", TF, gpus=1)
    answer = handle_filter(
        built, parse_extender_args({"Pod": left_behind, "NodeNames": ["a", "b"]}), default_pool=""
    )
    assert answer["NodeNames"] == ["b"]
    assert reserve_for_bind(built, left_behind, "b", default_pool="shared") is None
