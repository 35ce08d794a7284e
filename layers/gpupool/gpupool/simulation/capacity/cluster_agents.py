"""The kubelet, the node agent and TensorFusion's scheduler as gpupool's simulated cluster sees them.

Role: `ClusterAgents` writes into the `MemoryCluster` what those parties write in a real one:
a joined node (a Ready `Node` labelled `tensor-fusion.ai/node-provisioner=<claim>`, named like
its claim, and its `GPUNode` Running with the instance's GPUs, TFLOPS and VRAM), a node that
leaves with its instance, and worker pods (labels `tensor-fusion.ai/enabled=true`,
`component=worker`, bound to their node) placed by the shared placement rule, the GPUNode's
available TFLOPS / VRAM following what its pods take. It reports the pods a drain evicted.
A node takes pods once it is Ready, not cordoned, and its claim is Bound and not deleting.

Must not: decide anything (the services and the placement rule do).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction

from gpupool.core.model.base import Condition, ObjectMeta
from gpupool.core.model.constants import LABEL_COMPONENT, LABEL_ENABLED, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import Node, NodeSpec, NodeStatus, Pod, PodSpec
from gpupool.core.model.node import GPUNode, GPUNodeStatus
from gpupool.core.quantity import Quantity
from gpupool.simulation.capacity.placement import NodeShape, SimNode
from gpupool.simulation.capacity.sizes import OfferingSize
from gpupool.testing.memory_ports import MemoryCluster

__all__ = ["ClusterAgents"]

_GIB = 2**30
_WORKER = {LABEL_ENABLED: "true", LABEL_COMPONENT: "worker"}


def _tflops(value: Decimal) -> Quantity:
    return Quantity.from_number(Fraction(str(value)))


def _vram(gib: Decimal) -> Quantity:
    return Quantity.from_number(Fraction(str(gib)) * _GIB, binary=True)


class ClusterAgents:
    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._pods: dict[str, str] = {}  # pod → node, as placed

    def join(self, claim: str, size: OfferingSize) -> None:
        node = Node(
            metadata=ObjectMeta(name=claim, labels={LABEL_NODE_PROVISIONER: claim}),
            spec=NodeSpec(),
            status=NodeStatus(conditions=[Condition(type="Ready", status="True")]),
        )
        status = GPUNodeStatus(
            phase="Running",
            total_tflops=_tflops(size.tflops),
            total_vram=_vram(size.vram_gib),
            available_tflops=_tflops(size.tflops),
            available_vram=_vram(size.vram_gib),
            total_gpus=size.gpus,
        )
        self.cluster.add(node, GPUNode(metadata=ObjectMeta(name=claim), status=status))

    def leave(self, claim: str) -> bool:
        """The node of an ended instance goes, with its pods; False when it never joined."""
        with self.cluster.lock:
            objects = self.cluster.objects
            existed = objects["Node"].pop(claim, None) is not None
            objects["GPUNode"].pop(claim, None)
            for pod in [p for p, n in self._pods.items() if n == claim]:
                objects["Pod"].pop(pod, None)
        return existed

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

    def _available(self, node: SimNode) -> None:
        gpu_node: GPUNode | None = self.cluster.objects["GPUNode"].get(node.name)
        if gpu_node is None or gpu_node.status is None:
            return
        free = node.free_share
        status = gpu_node.status.model_copy(
            update={
                "available_tflops": _tflops(free * node.shape.tflops_per_gpu),
                "available_vram": _vram(free * node.shape.vram_per_gpu),
            }
        )
        self.cluster.add(gpu_node.model_copy(update={"status": status}))

    def place(self, pod: str, node: SimNode) -> None:
        self._pods[pod] = node.name
        self.cluster.add(
            Pod(
                metadata=ObjectMeta(name=pod, namespace="default", labels=dict(_WORKER)),
                spec=PodSpec(node_name=node.name),
            )
        )
        self._available(node)

    def remove(self, pod: str, node: SimNode | None) -> None:
        self._pods.pop(pod, None)
        with self.cluster.lock:
            self.cluster.objects["Pod"].pop(pod, None)
        if node is not None:
            self._available(node)

    def evicted_pods(self) -> list[str]:
        """Pods placed here that are gone from the cluster without leaving (a drain evicted them)."""
        present = self.cluster.objects["Pod"]
        gone = [pod for pod in self._pods if pod not in present]
        for pod in gone:
            del self._pods[pod]
        return gone
