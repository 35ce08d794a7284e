"""The trace's pods as TensorFusion worker pods on gpupool's simulated nodes.

Role: `WorkerPods` is TensorFusion's scheduler as gpupool's side of the capacity simulation sees
it: the nodes that may take pods (`ready_nodes`: Ready, not cordoned, their claim Bound and not
deleting), worker pods (labels `tensor-fusion.ai/enabled=true`, `component=worker`) bound where
the shared placement rule put them, the node agent's report of what they use after each
placement or departure (`Kubelet.report_usage`), with `allocations` the annotations the scheduler
extender writes (the GPUs held and the request, which consolidation's allocator reads), and the
pods a drain or a lost node took away
(`evicted_pods`: placed here, gone from the cluster, so pending again).

Must not: decide anything (the services and the placement rule do), or place a pod itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_FLOOR, Decimal

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import (
    ANNOTATION_COMPUTE_PERCENT_REQUEST,
    ANNOTATION_DEDICATED_GPU,
    ANNOTATION_GPU_COUNT,
    ANNOTATION_GPU_IDS,
    ANNOTATION_GPU_POOL,
    ANNOTATION_VRAM_REQUEST,
    LABEL_COMPONENT,
    LABEL_ENABLED,
)
from gpupool.core.model.foreign import Node, Pod, PodSpec
from gpupool.simulation.capacity.placement import NodeShape, SimNode
from gpupool.simulation.capacity.pool_spec import POOL
from gpupool.simulation.cluster.kubelet import Kubelet
from gpupool.testing.memory_ports import MemoryCluster

__all__ = ["WorkerPods"]

_WORKER = {LABEL_ENABLED: "true", LABEL_COMPONENT: "worker"}
# The smallest GPU memory of the simulated pools' types (T4 and V100: 16 GiB).
VRAM_FLOOR_GIB = Decimal(16)


class WorkerPods:
    def __init__(self, cluster: MemoryCluster, kubelet: Kubelet, *, allocations: bool = False) -> None:
        self.cluster = cluster
        self._kubelet = kubelet
        self._pods: dict[str, str] = {}  # pod → node, as placed
        self._allocations = allocations

    def ready_nodes(self, shapes: Mapping[str, NodeShape]) -> dict[str, NodeShape]:
        objects = self.cluster.objects
        ready: dict[str, NodeShape] = {}
        for claim_name, shape in shapes.items():
            node: Node | None = objects["Node"].get(claim_name)
            claim = objects["GPUNodeClaim"].get(claim_name)
            if node is None or claim is None or node.spec.unschedulable or not node.is_ready():
                continue
            if claim.metadata.deletion_timestamp is not None or claim.status is None:
                continue
            if claim.status.phase == "Bound":
                ready[claim_name] = shape
        return ready

    def place(self, pod: str, node: SimNode) -> None:
        self._pods[pod] = node.name
        self._kubelet.store.create(
            Pod(
                metadata=ObjectMeta(
                    name=pod,
                    namespace="default",
                    labels=dict(_WORKER),
                    annotations=self._allocation(pod, node) if self._allocations else {},
                ),
                spec=PodSpec(node_name=node.name),
            )
        )
        self._kubelet.report_usage(node.name, node.free)

    def _allocation(self, pod: str, node: SimNode) -> dict[str, str]:
        """What the scheduler extender writes on a worker it binds: the GPUs it holds
        (`gpu-ids`) and its request — a share below one GPU as a compute percentage and that share
        of the pool's smallest GPU memory (`VRAM_FLOOR_GIB`), so the allocator's fit on any GPU
        model is the placement rule's share fit; whole GPUs as dedicated GPUs."""
        gpu_node = self.cluster.objects["GPUNode"].get(node.name)
        devices = gpu_node.status.managed_gpu_device_ids if gpu_node and gpu_node.status else []
        parts = node.pods.get(pod, [])
        ids = ",".join(devices[i] for i, _share in parts if i < len(devices))
        notes = {ANNOTATION_GPU_IDS: ids, ANNOTATION_GPU_POOL: POOL}
        share = parts[0][1] if parts else Decimal(1)
        if share >= 1:
            notes[ANNOTATION_DEDICATED_GPU] = "true"
            notes[ANNOTATION_GPU_COUNT] = str(len(parts))
        else:
            notes[ANNOTATION_COMPUTE_PERCENT_REQUEST] = str((share * 100).normalize())
            mebibytes = (share * VRAM_FLOOR_GIB * 1024).to_integral_value(ROUND_FLOOR)
            notes[ANNOTATION_VRAM_REQUEST] = f"{mebibytes}Mi"
        return notes

    def remove(self, pod: str, node: SimNode | None) -> None:
        self._pods.pop(pod, None)
        self._kubelet.store.delete(Pod, pod, namespace="default")
        if node is not None:
            self._kubelet.report_usage(node.name, node.free)

    def placed_on(self) -> dict[str, str]:
        """Each worker placed here and its node."""
        return dict(self._pods)

    def evicted_pods(self) -> list[str]:
        """Pods placed here that are gone from the cluster without leaving (a drain evicted them,
        or their node left)."""
        present = self.cluster.objects["Pod"]
        gone = [pod for pod in self._pods if pod not in present]
        for pod in gone:
            del self._pods[pod]
        return gone
