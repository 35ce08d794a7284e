"""A simulated TensorFusion workload and the node agent's book-keeping of what it uses.

Role: `start_workload` creates TensorFusion worker pods (labels `tensor-fusion.ai/enabled=true`,
`tensor-fusion.ai/component=worker`, the tflops/vram request annotations) already bound to
the chosen nodes and Running, and — as the node agent would — lowers the GPUNode's and the
GPUs' available TFLOPS and VRAM by what they request; `end_workload` deletes the pods and
gives the capacity back. Requests are whole GPUs' worth here (one pod per GPU).

Must not: decide where pods go by any policy of its own beyond "the nodes it is given", or
touch claims, pools or instances.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpupool.core.model.constants import (
    ANNOTATION_GPU_IDS,
    ANNOTATION_GPU_POOL,
    ANNOTATION_TFLOPS_REQUEST,
    ANNOTATION_VRAM_REQUEST,
    API_GROUP,
    COMPONENT_WORKER,
    LABEL_COMPONENT,
    LABEL_ENABLED,
    LABEL_WORKLOAD,
)
from gpupool.core.quantity import Quantity
from gpupool.sandbox.demo.objects import JsonObject, ObjectStore

__all__ = ["Workload", "end_workload", "start_workload"]

NAMESPACE = "default"


@dataclass(frozen=True)
class Workload:
    """The pods of one workload, by node."""

    name: str
    pods: tuple[tuple[str, str], ...]  # (pod name, node name)


def _gpus_on(objects: ObjectStore, node: str) -> list[JsonObject]:
    return [
        g
        for g in objects.list(API_GROUP, "gpus")
        if (g["metadata"].get("labels") or {}).get("kubernetes.io/hostname") == node
    ]


def _set_available(objects: ObjectStore, node: str, *, used: bool) -> None:
    """The node agent's view: a used GPU has nothing available; a free one has its capacity."""
    gpus = _gpus_on(objects, node)
    for gpu in gpus:
        capacity = gpu["status"].get("capacity") or {}
        available = {"tflops": "0", "vram": "0"} if used else dict(capacity)
        objects.patch_status(API_GROUP, "gpus", gpu["metadata"]["name"], {"available": available})
    gpu_node = objects.get(API_GROUP, "gpunodes", node)
    if gpu_node is None:
        return
    status = gpu_node.get("status") or {}
    patch = (
        {"availableTFlops": "0", "availableVRAM": "0"}
        if used
        else {"availableTFlops": status.get("totalTFlops"), "availableVRAM": status.get("totalVRAM")}
    )
    objects.patch_status(API_GROUP, "gpunodes", node, patch)


def start_workload(objects: ObjectStore, name: str, nodes: Sequence[str], *, pool: str) -> Workload:
    """One worker pod per node, each using all of the node's GPUs."""
    pods: list[tuple[str, str]] = []
    for index, node in enumerate(nodes):
        gpu_node = objects.get(API_GROUP, "gpunodes", node) or {}
        status = gpu_node.get("status") or {}
        tflops = str(Quantity.parse(str(status.get("totalTFlops") or "0")))
        vram = str(Quantity.parse(str(status.get("totalVRAM") or "0")))
        pod_name = f"{name}-{index}"
        gpu_ids = ",".join(g["metadata"]["name"] for g in _gpus_on(objects, node))
        body: JsonObject = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": NAMESPACE,
                "labels": {LABEL_ENABLED: "true", LABEL_COMPONENT: COMPONENT_WORKER, LABEL_WORKLOAD: name},
                "annotations": {
                    ANNOTATION_GPU_POOL: pool,
                    ANNOTATION_TFLOPS_REQUEST: tflops,
                    ANNOTATION_VRAM_REQUEST: vram,
                    ANNOTATION_GPU_IDS: gpu_ids,
                },
            },
            "spec": {
                "nodeName": node,
                "containers": [{"name": "worker", "image": "tensorfusion/worker:simulated"}],
            },
            "status": {"phase": "Running"},
        }
        objects.create("", "pods", body, namespace=NAMESPACE)
        _set_available(objects, node, used=True)
        pods.append((pod_name, node))
    return Workload(name=name, pods=tuple(pods))


def end_workload(objects: ObjectStore, workload: Workload) -> None:
    """Delete the workload's pods and give their GPUs back."""
    for pod_name, node in workload.pods:
        objects.delete("", "pods", pod_name, namespace=NAMESPACE)
        if objects.get("", "nodes", node) is not None:
            _set_available(objects, node, used=False)
