"""The usable-GPUs label keeper: kube-scheduler hears, as a Node update, that a node's GPUs came.

Role: keep `gpupool.io/usable-gpus=<count>` (`gpupool.core.allocator.usable_gpus`) on every node
with usable GPUs the hub sees, and off every other node that carries it. The hub tells the keeper
what the Node watch shows and wakes it whenever a GPU object changes; the keeper's thread plans
in the core under the hub's lock and writes outside it through a `NodeLabeller`
(`converging.NodeKeeper`: after the first listing, on each wake and every resync). The label
changing is what makes kube-scheduler ask the extender again for the pods it refused while the
node had no GPUs yet; the count comes from the hub's own GPU view, so when kube-scheduler asks,
the extender already knows the GPUs.

Must not: decide placement, or write anything but that one label.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from gpupool.core.allocator import Allocator
from gpupool.core.allocator.usable_gpus import plan_usable_gpu_labels, usable_gpus_per_node
from gpupool_incluster.relay.converging import NodeKeeper
from gpupool_incluster.relay.ports import NodeLabeller

__all__ = ["UsableGpuLabels"]


class UsableGpuLabels(NodeKeeper):
    """Converges the usable-GPUs label; `observe_node` is called with the hub's lock held."""

    thread_name = "usable-gpu-labels"

    def __init__(
        self,
        labeller: NodeLabeller,
        *,
        lock: Any,
        allocator: Allocator,
        synced: threading.Event,
        resync: float = 30.0,
    ) -> None:
        super().__init__(synced=synced, resync=resync)
        self.labeller = labeller
        self.lock = lock
        self.allocator = allocator
        self.labelled: dict[str, str] = {}
        self.known: set[str] = set()

    def observe_node(self, name: str, *, value: str | None, deleted: bool = False) -> None:
        """What the Node watch shows: the node exists, and its label's value (None: absent)."""
        self.labelled.pop(name, None)
        if deleted:
            self.known.discard(name)
            return
        self.known.add(name)
        if value is not None:
            self.labelled[name] = value
        self.wake()

    def plan(self) -> dict[str, str | None]:
        with self.lock:
            counts = usable_gpus_per_node(self.allocator.state.gpus.values())
            return plan_usable_gpu_labels(counts, dict(self.labelled), set(self.known))

    def reconcile_once(self) -> dict[str, str | None]:
        """Plan, then write each change; a failed write is logged and retried on the next round."""
        plan = self.plan()
        for node, value in plan.items():
            if not self.attempt(
                node, "set the usable-GPUs label", partial(self.labeller.set_usable_gpus, node, value)
            ):
                continue
            with self.lock:
                if value is None:
                    self.labelled.pop(node, None)
                else:
                    self.labelled[node] = value
        return plan
