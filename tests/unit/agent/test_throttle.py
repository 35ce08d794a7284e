"""The duty cycler's promises, with a recording `kill` instead of real signals: it stops and
resumes only the pids it was given, a lifted throttle resumes at once, close() leaves nothing
stopped, very small duties rest whole periods, dry-run signals nothing, a pid that was reused by
another process is never signalled; and the compute controller releases a worker at once when its
limit is lifted or it leaves the GPU."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from gpupool_incluster.agent.compute import ComputeController, WorkerOnGpu
from gpupool_incluster.agent.throttle import DutyCycler


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def __call__(self, pid: int, sig: int) -> None:
        with self.lock:
            self.calls.append((pid, sig))

    def stopped(self) -> set[int]:
        state: dict[int, bool] = {}
        with self.lock:
            for pid, sig in self.calls:
                state[pid] = sig == signal.SIGSTOP
        return {pid for pid, stopped in state.items() if stopped}

    def count(self, sig: int) -> int:
        with self.lock:
            return sum(1 for _, s in self.calls if s == sig)


def test_cycles_only_given_pids_and_leaves_nothing_stopped() -> None:
    kill = Recorder()
    cycler = DutyCycler(period_s=0.02, kill=kill)
    cycler.start()
    cycler.set("w", frozenset({101, 102}), 0.5)
    time.sleep(0.3)
    assert kill.count(signal.SIGSTOP) >= 4 and kill.count(signal.SIGCONT) >= 4
    assert {pid for pid, _ in kill.calls} == {101, 102}
    cycler.clear("w")
    assert kill.stopped() == set() and cycler.stopped_pids() == frozenset()
    cycler.set("w", frozenset({101}), 0.3)
    time.sleep(0.1)
    cycler.close()
    assert kill.stopped() == set()
    assert cycler.throttled_seconds("w") == 0.0  # forgotten after close


def test_tiny_duty_rests_whole_periods() -> None:
    kill = Recorder()
    cycler = DutyCycler(period_s=0.01, kill=kill, min_on=0.1)
    cycler.start()
    cycler.set("w", frozenset({7}), 0.01)  # 1 % → run 10 % of one period in ten
    time.sleep(0.5)
    resumes = kill.count(signal.SIGCONT)
    cycler.close()
    assert 1 <= resumes <= 15, resumes  # ~5 runs in 50 periods, not 50
    assert kill.stopped() == set()


def test_dry_run_signals_nothing() -> None:
    kill = Recorder()
    cycler = DutyCycler(period_s=0.01, kill=kill, dry_run=True)
    cycler.start()
    cycler.set("w", frozenset({9}), 0.2)
    time.sleep(0.1)
    cycler.close()
    assert kill.calls == []


def test_bad_period_is_refused() -> None:
    with pytest.raises(ValueError, match="5 ms"):
        DutyCycler(period_s=0.001)


def test_lifting_a_limit_or_leaving_the_gpu_resumes_at_once() -> None:
    kill = Recorder()
    cycler = DutyCycler(period_s=0.01, kill=kill)
    controller = ComputeController(cycler)
    cycler.start()
    try:
        limited = WorkerOnGpu("w", "gpu-0", 1, 10.0, 25.0, frozenset({5}))
        for _ in range(20):
            controller.step([limited], {5: 100.0})
            time.sleep(0.01)
        assert cycler.duty("w") < 0.25 and kill.count(signal.SIGSTOP) > 0
        assert controller.readings["w"].target == 25.0
        lifted = WorkerOnGpu("w", "gpu-0", 1, 10.0, 100.0, frozenset({5}))
        controller.step([lifted], {5: 100.0})
        time.sleep(0.05)
        assert kill.stopped() == set() and cycler.duty("w") == 1.0
        controller.step([limited], {5: 100.0})
        time.sleep(0.05)
        controller.step([], {})  # the worker left the GPU
        time.sleep(0.05)
        assert kill.stopped() == set() and "w" not in controller.readings
    finally:
        cycler.close()


def test_a_reused_pid_is_rechecked_before_every_signal_and_never_signalled() -> None:
    """Issue 22, Why 10: the cycler used to signal cached pids for up to a tick without re-checking."""
    kill = Recorder()
    starts = {201: "1000", 202: "2000"}
    cycler = DutyCycler(period_s=0.02, kill=kill, identity=lambda pid: starts.get(pid))
    cycler.start()
    cycler.set("w", frozenset({201, 202}), 0.5)
    deadline = time.monotonic() + 5
    while kill.count(signal.SIGSTOP) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    with kill.lock:
        starts[202] = "9999"  # 202 exited and the pid now names a stranger
        before = len(kill.calls)
    time.sleep(0.2)
    with kill.lock:
        after = kill.calls[before:]
    cycler.close()
    assert any(pid == 201 for pid, _ in after)
    assert not any(pid == 202 and sig == signal.SIGSTOP for pid, sig in after)
    assert 202 not in cycler.stopped_pids()
