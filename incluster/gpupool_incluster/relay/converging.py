"""What the relay's node keepers share: a thread that converges Nodes on what the hub knows.

Role: `NodeKeeper` waits for the hub's first full listing (an earlier plan would act on nodes
whose pods or GPUs were not listed yet), then runs its subclass's `reconcile_once` on every wake
and every `resync` seconds, so a write that failed (or a value someone changed by hand)
converges. `attempt` makes one Node write: a failure is remembered per node and logged — with
its traceback when it is a bug rather than an API answer — and never stops the loop.

Must not: plan anything (subclasses plan in the core) or hold the hub's lock while writing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["NodeKeeper"]

log = logging.getLogger("gpupool.relay")


class NodeKeeper:
    """Runs `reconcile_once` after the first sync, on `wake()` and every `resync` seconds."""

    thread_name = "node-keeper"

    def __init__(self, *, synced: threading.Event, resync: float = 30.0) -> None:
        self.synced = synced
        self.resync = resync
        self.failures: dict[str, str] = {}
        self._wake = threading.Event()

    def wake(self) -> None:
        self._wake.set()

    def reconcile_once(self) -> object:
        raise NotImplementedError

    def attempt(self, node: str, action: str, write: Callable[[], object]) -> bool:
        """Make one write for `node`; False (logged, remembered in `failures`) when it failed."""
        try:
            write()
        except Exception as exc:  # the writer's failure, whatever it is, must not stop the loop …
            self.failures[node] = str(exc)
            if isinstance(exc, TypeError | AttributeError | NameError | AssertionError):
                # … but a bug is not an API answer: log it with its traceback
                log.exception("%s on node %s broke", action, node)
            else:
                log.warning("cannot %s on node %s: %s", action, node, exc)
            return False
        self.failures.pop(node, None)
        return True

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
        thread = threading.Thread(target=self.run, args=(stop,), name=self.thread_name, daemon=True)
        thread.start()
        return thread
