"""Duty cycling with SIGSTOP / SIGCONT, and the guarantee that nothing is left stopped.

Role: `DutyCycler` keeps, per throttled worker, a set of pids and a duty (fraction of each period
they may run). A thread repeats a period (default 100 ms): resume everyone, then stop each worker's
processes once its duty has elapsed. A duty of 1 (or removing the worker) resumes them at once.
Every stop and resume is also written to the guardian (see `guardian`), a separate process — the
pod's guardian container, or else a child — that resumes whatever is still stopped when the agent
goes away for any reason, SIGKILL included; `close()` resumes everything itself. Before every
signal the pid is re-checked against the start time it had when it was given (`procs.process_start`):
a pid that now names another process is dropped, never signalled. In dry-run mode the cycler
counts what it would do and signals nothing.

Must not: choose duties (the compute controller does) or touch a pid it was not given.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from gpupool_incluster.agent.procs import process_start

__all__ = ["DutyCycler", "Guardian"]

Identity = Callable[[int], "str | None"]

log = logging.getLogger("gpupool.agent")
_MAX_EVERY = 20
_FIFO_TRIES, _FIFO_WAIT_S = 40, 0.25  # wait up to 10 s for the guardian container
Kill = Callable[[int, int], None]


class Guardian:
    """The guardian the agent reports stops and resumes to: the pod's guardian container over a FIFO
    (it outlives this container), or else a child process over a pipe (it outlives this process)."""

    def __init__(self, fifo: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._fifo = fifo
        self._process: subprocess.Popen[str] | None = None
        self._stopped: dict[int, str] = {}  # what the guardian must resume: replayed on reconnect
        self._stream = self._connect()

    def _connect(self) -> IO[str]:
        if self._fifo is not None:
            failure: OSError | None = None
            for _ in range(_FIFO_TRIES):  # the sidecar starts first, but may not be reading yet
                try:
                    fd = os.open(self._fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: no guardian reading
                except OSError as exc:
                    failure = exc
                    time.sleep(_FIFO_WAIT_S)
                    continue
                os.set_blocking(fd, True)
                self._process = None
                return os.fdopen(fd, "w")
            log.error(
                "no guardian container on %s (%s); using a child guardian, which dies with this container",
                self._fifo,
                failure,
                extra={"action": "guardian-fallback"},
            )
        self._process = subprocess.Popen(
            [sys.executable, "-m", "gpupool_incluster.agent.guardian"],
            stdin=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self._process.stdin is not None
        return self._process.stdin

    @property
    def pid(self) -> int | None:
        """The child guardian's pid; None when the guardian is the pod's guardian container."""
        return None if self._process is None else self._process.pid

    def record(self, verb: str, pid: int, start: str | None = None) -> None:
        mark = start or "-"
        with self._lock:
            if verb == "S":
                self._stopped[pid] = mark
            else:
                self._stopped.pop(pid, None)
            try:
                self._stream.write(f"{verb} {pid} {mark}\n")
                self._stream.flush()
            except (BrokenPipeError, OSError, ValueError):
                log.error("throttle guardian died; connecting again", extra={"action": "guardian-restart"})
                self._stream = self._connect()
                self._stream.write("".join(f"S {p} {m}\n" for p, m in self._stopped.items()))
                self._stream.flush()

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(OSError, ValueError):
                self._stream.close()
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(5)


@dataclass(slots=True)
class _Entry:
    pids: frozenset[int]
    duty: float
    throttled_s: float = 0.0
    every: int = 1  # run in one period out of `every` (very small duties)
    stops: int = 0


@dataclass(slots=True)
class _Counters:
    stops: int = 0
    resumes: int = 0
    entries: dict[str, _Entry] = field(default_factory=dict)


class DutyCycler:
    """Runs each throttled worker's processes for `duty` of every period, stopped the rest."""

    def __init__(
        self,
        *,
        period_s: float = 0.1,
        guardian: Guardian | None = None,
        kill: Kill = os.kill,
        identity: Identity = process_start,
        dry_run: bool = False,
        min_on: float = 0.1,
    ) -> None:
        if not 0.005 <= period_s <= 10:
            raise ValueError(f"throttle period {period_s}s must be within 5 ms … 10 s")
        self.period_s = period_s
        self.min_on = min_on
        self.dry_run = dry_run
        self._guardian = guardian
        self._kill = kill
        self._identity = identity
        self._started: dict[int, str | None] = {}  # pid → its start time when it was given to us
        self._lock = threading.Lock()
        self._state = _Counters()
        self._stopped: set[int] = set()
        self._stop_event = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpupool-duty-cycler", daemon=True)

    # ---- control -----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def set(self, key: str, pids: frozenset[int], duty: float) -> None:
        """Throttle `key`'s processes to `duty` ∈ [0, 1]; 1 lifts the throttle."""
        duty = max(0.0, min(1.0, duty))
        with self._lock:
            entry = self._state.entries.get(key)
            released = (entry.pids - pids) if entry else frozenset()
            if duty >= 1.0:
                self._state.entries.pop(key, None)
                released = entry.pids if entry else frozenset()
            elif entry is None:
                entry = self._state.entries[key] = _Entry(pids, duty)
            else:
                entry.pids, entry.duty = pids, duty
            for pid in pids - self._started.keys():
                self._started[pid] = self._identity(pid)
            if entry is not None and duty < 1.0:
                # A stop takes effect only once the process gets a CPU to take the signal: a run of
                # a few ms per period would be mostly that delay. Below `min_on`, run longer, less often.
                entry.every = min(_MAX_EVERY, math.ceil(self.min_on / duty)) if 0 < duty < self.min_on else 1
            self._resume(released)
            held = self._stopped.union(*(e.pids for e in self._state.entries.values()))
            for pid in self._started.keys() - held:
                del self._started[pid]

    def clear(self, key: str) -> None:
        self.set(key, frozenset(), 1.0)

    def duty(self, key: str) -> float:
        with self._lock:
            entry = self._state.entries.get(key)
            return entry.duty if entry else 1.0

    def throttled_seconds(self, key: str) -> float:
        with self._lock:
            entry = self._state.entries.get(key)
            return entry.throttled_s if entry else 0.0

    def stopped_pids(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._stopped)

    def close(self) -> None:
        """Stop cycling and resume every process this cycler stopped."""
        self._stop_event.set()
        if self._thread.is_alive():
            self._thread.join(2)
        with self._lock:
            self._state.entries.clear()
            self._resume(frozenset(self._stopped))

    # ---- the cycle ---------------------------------------------------------------------------
    def _same_process(self, pid: int) -> bool:
        """Re-checked before every signal: the pid still names the process we were given."""
        if pid not in self._started or self._identity(pid) == self._started[pid]:
            return True
        log.warning(
            "pid %s is no longer the process it was (it exited and the pid was reused): not signalled",
            pid,
            extra={"action": "pid-reused"},
        )
        for entry in self._state.entries.values():
            entry.pids = entry.pids - {pid}
        self._stopped.discard(pid)
        del self._started[pid]
        return False

    def _signal(self, pid: int, stop: bool) -> bool:
        """Signal `pid` if it is still the process it was; False when it is not (and is forgotten)."""
        if self.dry_run:
            return True
        if not self._same_process(pid):
            return False
        start = self._started.get(pid)
        if self._guardian is not None and stop:
            self._guardian.record("S", pid, start)  # recorded before the stop: a crash in between is safe
        try:
            self._kill(pid, signal.SIGSTOP if stop else signal.SIGCONT)
        except ProcessLookupError:
            pass
        except PermissionError:
            log.warning("no permission to signal pid %s", pid, extra={"action": "signal-refused"})
        if self._guardian is not None and not stop:
            self._guardian.record("C", pid, start)
        return True

    def _resume(self, pids: frozenset[int]) -> None:
        for pid in pids & frozenset(self._stopped):
            self._signal(pid, stop=False)
            self._stopped.discard(pid)
            self._state.resumes += 1

    def _stop_all(self, entry: _Entry) -> None:
        for pid in entry.pids - self._stopped:
            if self._signal(pid, stop=True):
                self._stopped.add(pid)
                self._state.stops += 1

    def _run(self) -> None:
        period = self.period_s
        next_start = time.monotonic()
        count = 0
        while not self._stop_event.is_set():
            count += 1
            with self._lock:
                resting = {key for key, e in self._state.entries.items() if count % e.every}
                kept = {pid for key in resting for pid in self._state.entries[key].pids}
                self._resume(frozenset(self._stopped - kept))
                for key in resting:
                    self._state.entries[key].throttled_s += period
                    self._stop_all(self._state.entries[key])
                plan = sorted(
                    (e.duty * e.every, key) for key, e in self._state.entries.items() if key not in resting
                )
            for duty, key in plan:
                stop_at = next_start + duty * period
                delay = stop_at - time.monotonic()
                if delay > 0 and self._stop_event.wait(delay):
                    return
                with self._lock:
                    entry = self._state.entries.get(key)
                    if entry is None or entry.duty >= 1.0:
                        continue
                    self._stop_all(entry)
                    entry.throttled_s += max(0.0, next_start + period - max(time.monotonic(), next_start))
                    entry.stops += 1
            next_start += period
            now = time.monotonic()
            if next_start < now - period:  # fell behind (a loaded machine): start afresh
                next_start = now
            if self._stop_event.wait(max(0.0, next_start - now)):
                return
