"""The one rule both policies are judged by: when a pod "gets capacity", and where it goes.

Role: `Placement` holds the pending pods (in arrival order) and the nodes a policy offers as
ready, each as its GPUs' free shares. A pod asking a share below one GPU fits a GPU with at
least that share free; a pod asking N whole GPUs needs N entirely free GPUs on one node (as
TensorFusion's GPUResourcesFit keeps a multi-GPU worker on one node). Among the nodes it fits,
the pod goes to the most used one (CompactFirst, TensorFusion's default placement), then by
name; inside a node, to the fullest GPU that fits. A trace GPU is one physical GPU of any model.
A pod on a node that goes away (drained, interrupted, compacted) is pending again. An arriving
pod is tried at once (`arrive`), so a pod shorter than a step still finds free capacity; the
pending ones are tried again on every step (`place_pending`). `gpu_seconds` adds up the GPUs
pods hold over the time they hold them.

Must not: launch or remove nodes (the policy's driver does), or know which policy runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from gpupool.simulation.capacity.demand_trace import Demand

__all__ = ["NodeShape", "Placement", "SimNode"]

ONE = Decimal(1)


@dataclass(frozen=True)
class NodeShape:
    """What a ready node offers: its GPUs, and each GPU's TFLOPS and VRAM (GiB)."""

    gpus: int
    tflops_per_gpu: Decimal
    vram_per_gpu: Decimal


@dataclass
class SimNode:
    name: str
    shape: NodeShape
    free: list[Decimal] = field(default_factory=list)
    pods: dict[str, list[tuple[int, Decimal]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.free:
            self.free = [ONE] * self.shape.gpus

    @property
    def free_share(self) -> Decimal:
        return sum(self.free, Decimal(0))

    def fit(self, gpus: Decimal) -> list[tuple[int, Decimal]] | None:
        """The GPUs (index, share) a request takes here, or None when it does not fit."""
        if gpus < ONE:
            fitting = [(free, i) for i, free in enumerate(self.free) if free >= gpus]
            return [(min(fitting)[1], gpus)] if fitting else None
        whole = [i for i, free in enumerate(self.free) if free == ONE]
        count = int(gpus)
        return [(i, ONE) for i in whole[:count]] if len(whole) >= count else None

    def take(self, pod: str, parts: list[tuple[int, Decimal]]) -> None:
        for index, share in parts:
            self.free[index] -= share
        self.pods[pod] = parts

    def release(self, pod: str) -> None:
        for index, share in self.pods.pop(pod, []):
            self.free[index] += share


class Placement:
    def __init__(self) -> None:
        self.nodes: dict[str, SimNode] = {}
        self.pending: dict[str, Demand] = {}
        self.placed: dict[str, tuple[Demand, str, float]] = {}  # pod → (demand, node, since)
        self.gpu_seconds = 0.0
        self._dirty = True  # something changed since the last place_pending

    def arrive(self, demand: Demand, at: float) -> str | None:
        """A pod arrives: placed at once when it fits (returns the node), else pending."""
        node = self._best_node(demand)
        if node is not None:
            self._take(demand, node, at)
            return node
        self.pending[demand.name] = demand
        return None

    def _unplace(self, name: str, at: float) -> tuple[Demand, str] | None:
        found = self.placed.pop(name, None)
        if found is None:
            return None
        demand, node_name, since = found
        self.gpu_seconds += float(demand.gpus) * max(0.0, at - since)
        node = self.nodes.get(node_name)
        if node is not None:
            node.release(name)
        self._dirty = True
        return demand, node_name

    def depart(self, name: str, at: float) -> str | None:
        """The pod leaves; returns the node it was on (None when it was still pending)."""
        self.pending.pop(name, None)
        found = self._unplace(name, at)
        return None if found is None else found[1]

    def requeue(self, name: str, at: float) -> None:
        """A placed pod lost its node or was evicted: pending again."""
        found = self._unplace(name, at)
        if found is not None:
            self.pending[name] = found[0]

    def close(self, at: float) -> None:
        """The window ends: count the GPU time of the pods still placed."""
        for name in list(self.placed):
            self._unplace(name, at)

    def sync_nodes(self, ready: Mapping[str, NodeShape], at: float) -> list[str]:
        """Make the ready nodes those given; returns the pods sent back to pending."""
        requeued: list[str] = []
        for name in [n for n in self.nodes if n not in ready]:
            for pod in list(self.nodes[name].pods):
                self.requeue(pod, at)
                requeued.append(pod)
            del self.nodes[name]
            self._dirty = True
        for name, shape in ready.items():
            if name not in self.nodes:
                self.nodes[name] = SimNode(name, shape)
                self._dirty = True
        return requeued

    def _best_node(self, demand: Demand) -> str | None:
        best: tuple[Decimal, str] | None = None
        for node in self.nodes.values():
            if node.fit(demand.gpus) is not None and (best is None or (node.free_share, node.name) < best):
                best = (node.free_share, node.name)
        return None if best is None else best[1]

    def _take(self, demand: Demand, node_name: str, at: float) -> None:
        node = self.nodes[node_name]
        parts = node.fit(demand.gpus)
        if parts is None:
            raise ValueError(f"pod {demand.name} does not fit node {node_name}")
        node.take(demand.name, parts)
        self.placed[demand.name] = (demand, node_name, at)

    def place_pending(self, at: float) -> list[tuple[str, str]]:
        """Place what fits now, in arrival order; returns (pod, node) for each placement."""
        if not self._dirty:
            return []
        self._dirty = False
        done: list[tuple[str, str]] = []
        smallest_unfit: dict[bool, Decimal] = {}  # per kind (share / whole): nothing this big fits
        for demand in sorted(self.pending.values()):
            whole = demand.gpus >= ONE
            if whole in smallest_unfit and demand.gpus >= smallest_unfit[whole]:
                continue
            node = self._best_node(demand)
            if node is None:
                smallest_unfit[whole] = min(demand.gpus, smallest_unfit.get(whole, demand.gpus))
                continue
            self._take(demand, node, at)
            del self.pending[demand.name]
            done.append((demand.name, node))
        return done

    def used_gpus(self) -> Decimal:
        return sum((d.gpus for d, _, _ in self.placed.values()), Decimal(0))
