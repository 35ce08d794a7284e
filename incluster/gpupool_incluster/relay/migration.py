"""Progressive migration's taint keeper: the used-by taint follows where gpupool has workers.

Role: with progressive migration on, keep `tensor-fusion.ai/used-by=tensor-fusion:PreferNoSchedule`
on every node that holds at least one gpupool allocation and off every idle node. The hub wakes
the keeper after a bind or a released / added allocation and tells it what the Node watch shows;
the keeper's thread then plans in the core (`plan_used_by_taints`) under the hub's lock and
writes outside it through a `NodeTainter`. It also resyncs every `resync` seconds, so a write
that failed (or a taint someone removed by hand) converges. Nothing happens before the hub's
first full listing: an early plan would clear taints of nodes whose pods were not listed yet.

Must not: decide placement, or write anything but that one taint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from gpupool.scheduler.progressive import TaintPlan, plan_used_by_taints
from gpupool_incluster.relay.converging import NodeKeeper
from gpupool_incluster.relay.ports import NodeTainter

__all__ = ["TaintKeeper"]


class TaintKeeper(NodeKeeper):
    """Converges the used-by taint; `observe_node` and `wake` are called with the hub's lock held."""

    thread_name = "progressive-taints"

    def __init__(
        self,
        tainter: NodeTainter,
        *,
        lock: Any,
        busy_nodes: Callable[[], set[str]],
        synced: threading.Event,
        resync: float = 30.0,
    ) -> None:
        super().__init__(synced=synced, resync=resync)
        self.tainter = tainter
        self.lock = lock
        self.busy_nodes = busy_nodes
        self.tainted: set[str] = set()
        self.known: set[str] = set()

    def observe_node(self, name: str, *, tainted: bool, deleted: bool = False) -> None:
        """What the Node watch shows: the node exists, and whether it carries the taint."""
        if deleted:
            self.known.discard(name)
            self.tainted.discard(name)
            return
        self.known.add(name)
        if tainted:
            self.tainted.add(name)
        else:
            self.tainted.discard(name)
        self.wake()

    def plan(self) -> TaintPlan:
        with self.lock:
            return plan_used_by_taints(self.busy_nodes(), set(self.tainted), set(self.known))

    def reconcile_once(self) -> TaintPlan:
        """Plan, then write each change; a failed write is logged and retried on the next round."""
        plan = self.plan()
        for node, present in [(n, True) for n in plan.add] + [(n, False) for n in plan.remove]:
            action = "progressive migration: " + ("add the taint" if present else "clear the taint")
            if not self.attempt(node, action, partial(self.tainter.set_used_by_taint, node, present)):
                continue
            with self.lock:
                (self.tainted.add if present else self.tainted.discard)(node)
        return plan
