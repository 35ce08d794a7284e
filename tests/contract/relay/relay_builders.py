"""Builders for the relay tests: GPU objects, pods, and an in-memory ClusterWriter that records calls.

`gpu_object` / `pool_object` are manifests (to store in the sandbox); `gpu_model` / `pool_model`
are the same read into their models, as the shared watches hand them to the hub."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool

T = "tensor-fusion.ai/"


def gpu_object(
    name: str,
    node: str,
    *,
    pool: str = "shared",
    tflops: str = "100",
    vram: str = "40Gi",
    available_tflops: str | None = None,
    model: str = "A100",
    index: int = 0,
) -> dict[str, Any]:
    return {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPU",
        "metadata": {"name": name, "labels": {T + "gpupool": pool}},
        "status": {
            "phase": "Running",
            "capacity": {"tflops": tflops, "vram": vram},
            "available": {"tflops": available_tflops or tflops, "vram": vram},
            "gpuModel": model,
            "vendor": "NVIDIA",
            "index": index,
            "nodeSelector": {"kubernetes.io/hostname": node},
        },
    }


def pool_object(name: str = "shared", *, default: bool = True) -> dict[str, Any]:
    annotations = {T + "is-default-pool": "true"} if default else {}
    return {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {},
    }


def gpu_model(name: str, node: str, **fields: Any) -> GPU:
    return GPU.model_validate(gpu_object(name, node, **fields))


def pool_model(name: str = "shared", *, default: bool = True) -> GPUPool:
    return GPUPool.model_validate(pool_object(name, default=default))


def tf_pod(
    name: str,
    *,
    tflops: str = "10",
    vram: str = "4Gi",
    namespace: str = "team",
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {T + "enabled": "true"},
            "annotations": {
                T + "tflops-request": tflops,
                T + "vram-request": vram,
                T + "gpupool": "shared",
                **(extra or {}),
            },
        },
        "spec": {"schedulerName": "tensor-fusion-scheduler", "containers": [{"name": "c", "image": "cuda"}]},
    }


class FakeWriter:
    """Pods by namespace/name; binding fails for a pod already bound, like the API server."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.fail_next_bind: Exception | None = None

    def add(self, pod: dict[str, Any]) -> None:
        self.pods[f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"] = pod

    def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self.pods[f"{namespace}/{name}"]

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str | None]) -> None:
        with self.lock:
            current = self.pods[f"{namespace}/{name}"]["metadata"]["annotations"]
            for key, value in annotations.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value

    def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        with self.lock:
            if self.fail_next_bind is not None:
                error, self.fail_next_bind = self.fail_next_bind, None
                raise error
            spec = self.pods[f"{namespace}/{name}"]["spec"]
            if spec.get("nodeName"):
                raise RuntimeError(f"409 Conflict: pod {name} is already assigned to node {spec['nodeName']}")
            spec["nodeName"] = node
