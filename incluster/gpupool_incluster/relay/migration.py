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

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from gpupool.scheduler.progressive import TaintPlan, plan_used_by_taints
from gpupool_incluster.relay.ports import NodeTainter

__all__ = ["TaintKeeper"]

log = logging.getLogger("gpupool.relay")


class TaintKeeper:
    """Converges the used-by taint; `observe_node` and `wake` are called with the hub's lock held."""

    def __init__(
        self,
        tainter: NodeTainter,
        *,
        lock: Any,
        busy_nodes: Callable[[], set[str]],
        synced: threading.Event,
        resync: float = 30.0,
    ) -> None:
        self.tainter = tainter
        self.lock = lock
        self.busy_nodes = busy_nodes
        self.synced = synced
        self.resync = resync
        self.tainted: set[str] = set()
        self.known: set[str] = set()
        self.failures: dict[str, str] = {}
        self._wake = threading.Event()

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
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def plan(self) -> TaintPlan:
        with self.lock:
            return plan_used_by_taints(self.busy_nodes(), set(self.tainted), set(self.known))

    def reconcile_once(self) -> TaintPlan:
        """Plan, then write each change; a failed write is logged and retried on the next round."""
        plan = self.plan()
        for node, present in [(n, True) for n in plan.add] + [(n, False) for n in plan.remove]:
            try:
                self.tainter.set_used_by_taint(node, present)
            except Exception as exc:  # the tainter's failure, whatever it is, must not stop the loop …
                self.failures[node] = str(exc)
                action = "add" if present else "clear"
                if isinstance(exc, TypeError | AttributeError | NameError | AssertionError):
                    # … but a bug is not an API answer: log it with its traceback
                    log.exception("progressive migration: %s taint on node %s broke", action, node)
                else:
                    log.warning("progressive migration: cannot %s taint on node %s: %s", action, node, exc)
                continue
            self.failures.pop(node, None)
            with self.lock:
                (self.tainted.add if present else self.tainted.discard)(node)
        return plan

    def run(self, stop: threading.Event) -> None:
        while not self.synced.wait(0.2):
            if stop.is_set():
                return
        while not stop.is_set():
            self._wake.clear()
            self.reconcile_once()
            deadline = time.monotonic() + self.resync
            while not stop.is_set() and not self._wake.wait(0.5) and time.monotonic() < deadline:
                pass

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="progressive-taints", daemon=True)
        thread.start()
        return thread
