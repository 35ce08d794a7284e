"""The world `benchmarks/scale.py` measures in: N GPU nodes of one busy cluster, as manifests.

Role: `ScaleWorld(nodes)` describes the cluster and `manifests()` yields every object, in the
order a loader creates them (each with the status it must carry), and `instances()` the cloud
instances behind the claims. Per node (g5.48xlarge, 8 × A10G): one GPUNodeClaim (Bound), one
core v1 Node (Ready, ~20 labels, conditions, capacity, a short image list, as kubelets report),
one GPUNode (Running) and 8 GPU objects; and 8 pods — 2 daemon pods and 6 TensorFusion workers
(`tensor-fusion.ai/component=worker`), so 5,000 nodes hold 40,000 pods (30,000 workers). The
nodes are split evenly over `pools` (2 or more) GPUPools (Provisioned, one GPUNodeClass). What
each function finds to do:

- launch: the last pool's warmResources ask for one node's worth more free capacity than its
  nodes report → one claim and one instance;
- bind (the periodic sweep): one claim per pool whose node has just joined → bound;
- compact: the last node of the first pool runs no workers → its claim is deleted (the other
  pools are due too and find nothing to remove).

Must not: talk to a server or the cloud (`scale_server` does), or depend on anything random: the
same size gives the same objects, names and ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from benchmarks.scale_objects import (
    CLUSTER,
    GPUS_PER_NODE,
    INSTANCE_TYPE,
    NOW,
    claim_manifest,
    free_on_node,
    gpu_manifest,
    gpu_node_manifest,
    node_class_manifest,
    node_manifest,
    per_node,
    pool_manifest,
)
from benchmarks.scale_pods import pod_manifest
from gpupool.core.model.constants import API_GROUP
from gpupool.core.model.instance import ManagedInstance

__all__ = ["NOW", "PODS_PER_NODE", "WORKERS_PER_NODE", "Manifest", "ScaleWorld"]

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
PODS_PER_NODE = 8
WORKERS_PER_NODE = 6

# (group, plural, manifest with status): what a loader creates, status included.
Manifest = tuple[str, str, dict[str, Any]]


@dataclass(frozen=True)
class ScaleWorld:
    nodes: int
    pools: int = 2

    def __post_init__(self) -> None:
        if self.pools < 2 or self.nodes < 2 * self.pools:
            raise ValueError(
                "a world needs 2 pools or more (launch and compaction work in different pools)"
                f" and 2 nodes per pool or more (nodes={self.nodes}, pools={self.pools})"
            )

    # ---- names ---------------------------------------------------------------------------
    def pool_of(self, index: int) -> str:
        return f"pool-{index * self.pools // self.nodes}"

    def pool_names(self) -> list[str]:
        return [f"pool-{p}" for p in range(self.pools)]

    @staticmethod
    def claim(index: int) -> str:
        return f"claim-{index:05d}"

    @staticmethod
    def node(index: int) -> str:
        return f"ip-10-{index // 65536}-{index // 256 % 256}-{index % 256}.ec2.internal"

    @staticmethod
    def instance_id(index: int) -> str:
        return f"i-{index + 1:017x}"

    def idle_node(self) -> int:
        """The node compaction removes: the first pool's last."""
        return self.nodes // self.pools - 1

    def joining_nodes(self) -> set[int]:
        """One per pool, whose claim is still Creating: the sweep binds them."""
        return {p * self.nodes // self.pools for p in range(self.pools)}

    @property
    def pods(self) -> int:
        return self.nodes * PODS_PER_NODE

    # ---- objects ---------------------------------------------------------------------------
    def manifests(self) -> Iterator[Manifest]:
        yield API_GROUP, "gpunodeclasses", node_class_manifest()
        for p, name in enumerate(self.pool_names()):
            yield API_GROUP, "gpupools", self._pool(p, name)
        for index in range(self.nodes):
            yield from self._node_objects(index)

    def _pool(self, p: int, name: str) -> dict[str, Any]:
        """Pool 0 needs all its nodes but the idle one (min) and little free capacity (warm), so
        compaction removes the idle node; the last pool's warm asks for one node more than its
        nodes have free, so launch adds one. The others need what they have."""
        members = [i for i in range(self.nodes) if self.pool_of(i) == name]
        free = [free_on_node(busy=i != self.idle_node()) for i in members]
        free_tflops, free_vram = sum(t for t, _ in free), sum(v for _, v in free)
        node_tflops, node_vram = per_node()
        if p == self.pools - 1:  # the launch pool (not pool 0 when there are several)
            warm = (free_tflops + node_tflops, free_vram + node_vram)
        else:
            warm = free_on_node(busy=True)
        min_nodes = len(members) - 1 if p == 0 else len(members)
        return pool_manifest(name, min_nodes=min_nodes, warm_tflops=warm[0], warm_vram_gib=warm[1])

    def _node_objects(self, index: int) -> Iterator[Manifest]:
        pool, name, claim = self.pool_of(index), self.node(index), self.claim(index)
        zone = ZONES[index % len(ZONES)]
        yield (
            API_GROUP,
            "gpunodeclaims",
            claim_manifest(claim, pool, zone, self.instance_id(index), index in self.joining_nodes()),
        )
        yield "", "nodes", node_manifest(name, claim, pool, zone, self.instance_id(index))
        yield (
            API_GROUP,
            "gpunodes",
            gpu_node_manifest(name, pool, self.instance_id(index), busy=index != self.idle_node()),
        )
        for gpu in range(GPUS_PER_NODE):
            yield API_GROUP, "gpus", gpu_manifest(name, pool, gpu)
        for pod in range(PODS_PER_NODE):
            worker = pod >= PODS_PER_NODE - WORKERS_PER_NODE and index != self.idle_node()
            yield "", "pods", pod_manifest(index, name, pod, worker=worker)

    def instances(self) -> list[ManagedInstance]:
        launched = NOW - timedelta(days=1)
        return [
            ManagedInstance(
                instance_id=self.instance_id(i),
                state="running",
                claim_name=self.claim(i),
                node_class="gpu-class",
                cluster=CLUSTER,
                instance_type=INSTANCE_TYPE,
                zone=ZONES[i % len(ZONES)],
                capacity_type="on-demand",
                launch_time=launched,
                tags={
                    "managed-by": API_GROUP,
                    f"{API_GROUP}/node-name": self.claim(i),
                    f"{API_GROUP}/cluster": CLUSTER,
                },
            )
            for i in range(self.nodes)
        ]
