"""The simulated kubelet and node agent: a node as it registers, its GPUs, and what its pods use.

Role: `Kubelet.register(NodeRegistration)` writes what a joining GPU node makes appear: the core
v1 Node its kubelet registers (Ready; labels `nvidia.com/gpu.present=true`, instance type, zone,
region, arch, os, hostname, `tensor-fusion.ai/node-provisioner=<claim>` when it has a claim, and
whatever its maker adds — Karpenter its NodeClaim's labels; `spec.providerID`, taints; capacity
and allocatable from the catalog) and what TensorFusion's node agent publishes: the GPUNode
(phase Running, manageMode Provisioned, TFLOPS / VRAM / GPU count from the catalog, nodeInfo)
and, when asked, one GPU object per device. `report_usage(node, free)` is the node agent's
book-keeping: the GPUNode's (and its GPUs') available TFLOPS and VRAM follow the free share of
each GPU. `deregister(node)` is what the cloud controller manager and the pod garbage collector
do when the instance is gone: the node, its GPUNode and GPUs, and the pods bound to it go.
Everything is written through a `ClusterStore`, so the demo (raw JSON in an API server) and
`gpupool simulate capacity` (typed objects in memory) run this one kubelet.
Simpler than the real ones: no heartbeats after registration, no device plugin; a node is
Ready the moment it registers; the capacity simulation asks for no GPU objects (gpupool's
services read a node's GPUs from its GPUNode, and a day of placements would update each device).

Must not: decide anything about claims, pools or instances, read the wall clock (time is the
given clock's), or write a claim.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from gpupool.core.catalog import Catalog, InstanceType
from gpupool.core.model.base import Condition, ObjectMeta, ObservedResource
from gpupool.core.model.cloud import Cloud
from gpupool.core.model.constants import (
    INITIAL_GPU_NODE_LABEL,
    LABEL_GPU_POOL,
    LABEL_NODE_PROVISIONER,
    pool_label,
)
from gpupool.core.model.foreign import Node, NodeSpec, NodeStatus, NodeTaint, Pod
from gpupool.core.model.node import GPU, GPUNode, GPUNodeInfo, GPUNodeSpec, GPUNodeStatus, GPUStatus
from gpupool.core.quantity import Quantity
from gpupool.service.ports import Clock
from gpupool.simulation.cluster.store import ClusterStore

__all__ = ["HOSTNAME_LABEL", "Kubelet", "NodeRegistration"]

HOSTNAME_LABEL = "kubernetes.io/hostname"
_GIB = 2**30
_NAMESPACE_UUID = uuid.UUID("6f1d7c1e-3a52-4c43-9a26-7a0b1f6d2e11")


@dataclass(frozen=True)
class NodeRegistration:
    """One node about to join: where it runs, what made it, and what its maker adds."""

    name: str
    instance_type: str
    zone: str
    region: str
    provider_id: str
    instance_id: str = ""
    claim: str | None = None  # the GPUNodeClaim it was provisioned for (its node-provisioner label)
    pool: str | None = None  # the pool its GPUNode and GPUs are labelled for, when known
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)  # on the Node and its GPUNode
    taints: Sequence[NodeTaint] = ()
    gpu_devices: bool = True  # the node agent publishes one GPU object per device


def _tflops(value: Fraction) -> Quantity:
    return Quantity.from_number(value)


def _vram(gib: Fraction) -> Quantity:
    return Quantity.from_number(gib * _GIB, binary=True)


def _gpu_device_name(instance_id: str, index: int) -> str:
    return f"gpu-{uuid.uuid5(_NAMESPACE_UUID, f'{instance_id}/{index}')}"


class Kubelet:
    """The kubelet and node agent of every simulated node."""

    def __init__(self, store: ClusterStore, *, catalog: Catalog, clock: Clock) -> None:
        self.store = store
        self._catalog = catalog
        self._clock = clock

    @property
    def catalog(self) -> Catalog:
        """The catalog its nodes' capacity comes from (the simulated Karpenter prices from it too)."""
        return self._catalog

    @property
    def cloud(self) -> Cloud:
        return self._catalog.cloud

    # ---- joining -------------------------------------------------------------------------
    def register(self, node: NodeRegistration) -> bool:
        """The node joins (False, and nothing written, when it is registered already)."""
        if self.store.get(Node, node.name) is not None:
            return False
        spec = self._catalog.instance_type(node.instance_type)
        self.store.create(self._node(node, spec))
        if spec is not None:
            devices = [_gpu_device_name(node.instance_id, i) for i in range(spec.gpu_count)]
            self.store.create(self._gpu_node(node, spec, devices if node.gpu_devices else []))
            if node.gpu_devices:
                for index, name in enumerate(devices):
                    self.store.create(self._gpu(node, spec, name, index))
        return True

    def _node(self, node: NodeRegistration, spec: InstanceType | None) -> Node:
        now = self._clock.now()
        labels = {
            INITIAL_GPU_NODE_LABEL: "true",
            "node.kubernetes.io/instance-type": node.instance_type,
            "topology.kubernetes.io/zone": node.zone,
            "topology.kubernetes.io/region": node.region,
            "kubernetes.io/arch": spec.arch if spec else "amd64",
            "kubernetes.io/os": "linux",
        }
        if node.claim is not None:
            labels[LABEL_NODE_PROVISIONER] = node.claim
        capacity = {
            "cpu": Quantity.parse(str(spec.vcpu) if spec else "2"),
            "memory": Quantity.parse(f"{spec.memory_gib}Gi" if spec else "4Gi"),
            "pods": Quantity.parse("110"),
            "nvidia.com/gpu": Quantity.parse(str(spec.gpu_count) if spec else "0"),
        }
        ready = Condition(
            type="Ready",
            status="True",
            reason="KubeletReady",
            message="kubelet is posting ready status (simulated)",
            last_heartbeat_time=now,
            last_transition_time=now,
        )
        return Node(
            metadata=ObjectMeta(
                name=node.name,
                labels={
                    **{k: v for k, v in labels.items() if v},
                    **node.labels,
                    HOSTNAME_LABEL: node.name,
                },
                annotations=dict(node.annotations),
            ),
            spec=NodeSpec(provider_id=node.provider_id, taints=list(node.taints)),
            status=NodeStatus(conditions=[ready], capacity=capacity, allocatable=dict(capacity)),
        )

    def _gpu_node(self, node: NodeRegistration, spec: InstanceType, devices: list[str]) -> GPUNode:
        tflops, vram = _tflops(spec.tflops), _vram(Fraction(spec.vram_gib))
        return GPUNode(
            metadata=ObjectMeta(
                name=node.name,
                labels={pool_label(node.pool): "true"} if node.pool else {},
                annotations=dict(node.annotations),
            ),
            spec=GPUNodeSpec(manage_mode="Provisioned"),
            status=GPUNodeStatus(
                phase="Running",
                total_tflops=tflops,
                total_vram=vram,
                available_tflops=tflops,
                available_vram=vram,
                total_gpus=spec.gpu_count,
                managed_gpus=spec.gpu_count,
                managed_gpu_device_ids=devices,
                node_info=GPUNodeInfo(
                    instance_id=node.instance_id or None,
                    region=node.region,
                    hostname=node.name,
                    gpu_model=spec.gpu_model,
                    gpu_count=spec.gpu_count,
                    architecture=spec.arch,
                    operating_system="linux",
                ),
            ),
        )

    def _gpu(self, node: NodeRegistration, spec: InstanceType, name: str, index: int) -> GPU:
        one = ObservedResource(
            tflops=_tflops(Fraction(spec.tflops_per_gpu)), vram=_vram(Fraction(spec.vram_gib_per_gpu))
        )
        labels = {LABEL_GPU_POOL: node.pool} if node.pool else {}
        return GPU(
            metadata=ObjectMeta(name=name, labels={**labels, HOSTNAME_LABEL: node.name}),
            status=GPUStatus(
                phase="Running",
                vendor="NVIDIA",
                gpu_model=spec.gpu_model,
                uuid=name.upper(),
                index=index,
                capacity=one,
                available=one,
                node_selector={HOSTNAME_LABEL: node.name},
            ),
        )

    # ---- the node agent's book-keeping ---------------------------------------------------
    def report_usage(self, node: str, free: Sequence[Decimal]) -> None:
        """Each GPU of `node` has `free[i]` of itself free (1: unused, 0: fully used)."""
        gpu_node = self.store.get(GPUNode, node)
        status = None if gpu_node is None else gpu_node.status
        if gpu_node is None or status is None or not status.total_gpus:
            return
        count = status.total_gpus
        per_tflops = (status.total_tflops or Quantity()).value / count
        per_vram = (status.total_vram or Quantity()).value / count
        share = Fraction(sum(free, Decimal(0)))
        self.store.write_status(
            gpu_node.model_copy(
                update={
                    "status": status.model_copy(
                        update={
                            "available_tflops": _tflops(share * per_tflops),
                            "available_vram": Quantity.from_number(share * per_vram, binary=True),
                        }
                    )
                }
            )
        )
        for index, name in enumerate(status.managed_gpu_device_ids):
            gpu = self.store.get(GPU, name)
            if gpu is None or gpu.status is None or gpu.status.capacity is None:
                continue
            capacity = gpu.status.capacity
            free_here = Fraction(free[index]) if index < len(free) else Fraction(1)
            available = ObservedResource(
                tflops=_tflops(free_here * (capacity.tflops or Quantity()).value),
                vram=Quantity.from_number(free_here * (capacity.vram or Quantity()).value, binary=True),
            )
            self.store.write_status(
                gpu.model_copy(update={"status": gpu.status.model_copy(update={"available": available})})
            )

    # ---- leaving -------------------------------------------------------------------------
    def deregister(self, node: str) -> bool:
        """The node's instance is gone: its GPUs, GPUNode and Node go, and the pods bound to it
        (the pod garbage collector's part); False when it had not joined."""
        gpu_node = self.store.get(GPUNode, node)
        if gpu_node is not None and gpu_node.status is not None:
            for name in gpu_node.status.managed_gpu_device_ids:
                self.store.delete(GPU, name)
            self.store.delete(GPUNode, node)
        existed = self.store.delete(Node, node)
        for pod in self.store.list(Pod):
            if pod.spec.node_name == node:
                self.store.delete(Pod, pod.name, namespace=pod.metadata.namespace or "")
        return existed
