"""The demo's TensorFusion workload: worker pods on chosen nodes, their GPUs reported used.

Role: `start_workload` creates TensorFusion worker pods (labels `tensor-fusion.ai/enabled=true`,
`tensor-fusion.ai/component=worker`, the tflops/vram request and GPU-id annotations) already bound
to the chosen nodes and Running, and — through the simulated cluster's node agent
(`Kubelet.report_usage`) — lowers the GPUNode's and the GPUs' available TFLOPS and VRAM to
nothing; `end_workload` deletes the pods and the node agent gives the capacity back. Requests
are whole nodes' worth here (one pod per node, using all its GPUs).

Must not: decide where pods go by any policy of its own beyond "the nodes it is given", or
touch claims, pools or instances.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import (
    ANNOTATION_GPU_IDS,
    ANNOTATION_GPU_POOL,
    ANNOTATION_TFLOPS_REQUEST,
    ANNOTATION_VRAM_REQUEST,
    COMPONENT_WORKER,
    LABEL_COMPONENT,
    LABEL_ENABLED,
    LABEL_WORKLOAD,
)
from gpupool.core.model.foreign import Container, Node, Pod, PodSpec, PodStatus
from gpupool.core.model.node import GPUNode
from gpupool.core.quantity import Quantity
from gpupool.simulation.cluster.kubelet import Kubelet

__all__ = ["Workload", "end_workload", "start_workload"]

NAMESPACE = "default"


@dataclass(frozen=True)
class Workload:
    """The pods of one workload, by node."""

    name: str
    pods: tuple[tuple[str, str], ...]  # (pod name, node name)


def _gpus(gpu_node: GPUNode | None) -> int:
    return 0 if gpu_node is None or gpu_node.status is None else gpu_node.status.total_gpus or 0


def start_workload(kubelet: Kubelet, name: str, nodes: Sequence[str], *, pool: str) -> Workload:
    """One worker pod per node, each using all of the node's GPUs."""
    pods: list[tuple[str, str]] = []
    for index, node in enumerate(nodes):
        gpu_node = kubelet.store.get(GPUNode, node)
        status = None if gpu_node is None else gpu_node.status
        tflops = (status.total_tflops if status else None) or Quantity()
        vram = (status.total_vram if status else None) or Quantity()
        pod_name = f"{name}-{index}"
        pod = Pod(
            metadata=ObjectMeta(
                name=pod_name,
                namespace=NAMESPACE,
                labels={LABEL_ENABLED: "true", LABEL_COMPONENT: COMPONENT_WORKER, LABEL_WORKLOAD: name},
                annotations={
                    ANNOTATION_GPU_POOL: pool,
                    ANNOTATION_TFLOPS_REQUEST: str(tflops),
                    ANNOTATION_VRAM_REQUEST: str(vram),
                    ANNOTATION_GPU_IDS: ",".join(status.managed_gpu_device_ids if status else []),
                },
            ),
            spec=PodSpec(
                node_name=node, containers=[Container(name="worker", image="tensorfusion/worker:simulated")]
            ),
            status=PodStatus(phase="Running"),
        )
        kubelet.store.create(pod)
        kubelet.report_usage(node, [Decimal(0)] * _gpus(gpu_node))
        pods.append((pod_name, node))
    return Workload(name=name, pods=tuple(pods))


def end_workload(kubelet: Kubelet, workload: Workload) -> None:
    """Delete the workload's pods and give their GPUs back."""
    for pod_name, node in workload.pods:
        kubelet.store.delete(Pod, pod_name, namespace=NAMESPACE)
        if kubelet.store.get(Node, node) is not None:
            gpus = _gpus(kubelet.store.get(GPUNode, node))
            kubelet.report_usage(node, [Decimal(1)] * gpus)
