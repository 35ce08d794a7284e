"""Builder for consolidation tests: a pool of Bound nodes, their GPU objects and the workers on them.

Each node has `gpus` GPUs of 64 TFLOPS and 16 GiB; a worker holds `share` of each GPU it names
(tflops-request share × 64, vram-request share × 16 GiB) and the `gpu-ids` annotation the
scheduler writes, so the allocator rebuilds exactly what the test placed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import (
    ANNOTATION_GPU_IDS,
    ANNOTATION_GPU_POOL,
    ANNOTATION_TFLOPS_REQUEST,
    ANNOTATION_VRAM_REQUEST,
    LABEL_ENABLED,
    LABEL_GPU_POOL,
)
from gpupool.core.model.foreign import Pod, PodSpec
from gpupool.core.model.node import GPU, GPUNode, GPUNodeStatus, GPUStatus, ObservedResource
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.quantity import Quantity
from tests.unit.decisions.builders import claim, node, pool, snapshot

TFLOPS, VRAM_GIB = 64, 16


@dataclass
class WNode:
    name: str
    gpus: int = 1
    price: str = "0.526"
    age: timedelta = timedelta(hours=1)
    labels: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    phase: str = "Bound"
    gpu_node_labels: dict[str, str] = field(default_factory=dict)  # the node agent's GPUNode


@dataclass
class WPod:
    name: str
    node: str
    gpus: tuple[int, ...] = (0,)
    share: Fraction = Fraction(1, 2)
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    namespace: str = "default"


def gpu_name(node_name: str, index: int) -> str:
    return f"{node_name}-gpu{index}"


def _q(value: Fraction, unit: str = "") -> Quantity:
    return Quantity.parse(f"{Decimal(value.numerator) / Decimal(value.denominator)}{unit}")


def build(
    nodes: list[WNode],
    pods: list[WPod],
    *,
    the_pool: GPUPool | None = None,
    compaction: dict[str, Any] | None = None,
    min_: tuple[str, str] | None = None,
    warm: tuple[str, str] | None = None,
) -> tuple[PoolSnapshot, list[GPU]]:
    base = the_pool or pool(min_=min_, warm=warm)
    if compaction is not None:
        data = base.model_dump(by_alias=True, mode="json", exclude_none=True)
        data["spec"]["nodeManagerConfig"]["nodeCompaction"] = compaction
        base = GPUPool.model_validate(data)
    used: dict[tuple[str, int], Fraction] = {}
    for p in pods:
        for index in p.gpus:
            used[(p.node, index)] = used.get((p.node, index), Fraction(0)) + p.share
    gpus: list[GPU] = []
    gpu_nodes: list[GPUNode] = []
    for n in nodes:
        free_total = Fraction(0)
        for index in range(n.gpus):
            free = 1 - used.get((n.name, index), Fraction(0))
            free_total += free
            gpus.append(
                GPU(
                    metadata=ObjectMeta(name=gpu_name(n.name, index), labels={LABEL_GPU_POOL: base.name}),
                    status=GPUStatus(
                        phase="Running",
                        index=index,
                        capacity=ObservedResource(
                            tflops=_q(Fraction(TFLOPS)), vram=_q(Fraction(VRAM_GIB), "Gi")
                        ),
                        available=ObservedResource(tflops=_q(free * TFLOPS), vram=_q(free * VRAM_GIB, "Gi")),
                        node_selector={"kubernetes.io/hostname": n.name},
                    ),
                )
            )
        gpu_nodes.append(
            GPUNode(
                metadata=ObjectMeta(name=n.name, labels=dict(n.gpu_node_labels)),
                status=GPUNodeStatus(
                    phase="Running",
                    total_tflops=_q(Fraction(TFLOPS * n.gpus)),
                    total_vram=_q(Fraction(VRAM_GIB * n.gpus), "Gi"),
                    available_tflops=_q(free_total * TFLOPS),
                    available_vram=_q(free_total * VRAM_GIB, "Gi"),
                    total_gpus=n.gpus,
                ),
            )
        )
    workers = [
        Pod(
            metadata=ObjectMeta(
                name=p.name,
                namespace=p.namespace,
                labels={LABEL_ENABLED: "true", **p.labels},
                annotations={
                    ANNOTATION_TFLOPS_REQUEST: str(_q(p.share * TFLOPS)),
                    ANNOTATION_VRAM_REQUEST: str(_q(p.share * VRAM_GIB, "Gi")),
                    ANNOTATION_GPU_POOL: base.name,
                    ANNOTATION_GPU_IDS: ",".join(gpu_name(p.node, i) for i in p.gpus),
                    **({"tensor-fusion.ai/gpu-count": str(len(p.gpus))} if len(p.gpus) > 1 else {}),
                    **p.annotations,
                },
            ),
            spec=PodSpec(node_name=p.node),
        )
        for p in pods
    ]
    claims = [
        claim(
            n.name,
            phase=n.phase,
            instance_id=f"i-{n.name}",
            annotations={"tensor-fusion.ai/hourly-pricing": n.price},
        )
        for n in nodes
    ]
    kube_nodes = [
        node(n.name, claim_name=n.name, age=n.age, labels=n.labels, unschedulable=n.unschedulable)
        for n in nodes
    ]
    return snapshot(base, claims=claims, nodes=kube_nodes, gpu_nodes=gpu_nodes, worker_pods=workers), gpus


UNDER = {"policy": "WhenUnderutilized", "budgets": [{"nodes": "100%"}]}
