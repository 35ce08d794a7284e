"""The throttle guardian: a tiny process that resumes every process the agent left stopped.

Role: it reads "S <pid> <start>" (stopped) and "C <pid> <start>" (continued) lines, where `<start>`
is the process's start time (`procs.process_start`; "-" when unknown). When its input reaches end
of file — the agent exited, crashed or was SIGKILLed, so its end of the pipe closed — it sends
SIGCONT to every pid still recorded as stopped whose start time is still the recorded one (a pid
reused by another process is never signalled). Two ways to run it:
- as the agent's child (`python -m gpupool_incluster.agent.guardian`, in its own session, reading
  stdin): covers a crash or SIGKILL of the agent process, but not of its whole container (the
  runtime kills every process in the container);
- as its own container in the agent's pod (`--fifo PATH`, PATH on a volume both containers mount):
  it outlives the agent container, and after each end of file it resumes, then waits for the next
  agent to open the FIFO. This is what the chart runs, so a killed agent container leaves nothing
  stopped while the kubelet restarts it.
As the agent's child, SIGINT and SIGTERM are ignored so that a signal to the agent's process group
cannot take the guardian down before it has done its job; in its own container, SIGTERM (pod
shutdown) ends it once the connected agent's stream has ended and been resumed.

Must not: stop anything, or act before end of file.
"""

from __future__ import annotations

import argparse
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from gpupool_incluster.agent.procs import process_start

__all__ = ["main", "replay", "resume"]

UNKNOWN = "-"


def replay(lines: Iterable[str]) -> dict[int, str]:
    """The pids left stopped after a stream of S/C lines, with their start times (malformed lines ignored)."""
    stopped: dict[int, str] = {}
    for line in lines:
        verb, _, rest = line.strip().partition(" ")
        pid_text, _, start = rest.partition(" ")
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if verb == "S":
            stopped[pid] = start.strip() or UNKNOWN
        elif verb == "C":
            stopped.pop(pid, None)
    return stopped


def resume(
    stopped: dict[int, str],
    *,
    start_of: Callable[[int], str | None] = process_start,
    kill: Callable[[int, int], None] = os.kill,
) -> list[int]:
    """SIGCONT each pid still the process it was when stopped; the pids resumed."""
    resumed = []
    for pid, start in sorted(stopped.items()):
        if start != UNKNOWN and start_of(pid) != start:
            continue  # gone, or the pid now names another process: not ours to signal
        try:
            kill(pid, signal.SIGCONT)
        except OSError:
            continue
        resumed.append(pid)
    return resumed


def _serve_fifo(path: Path) -> None:
    if not path.exists():
        os.mkfifo(path, 0o600)
    elif not stat.S_ISFIFO(path.stat().st_mode):
        raise SystemExit(f"guardian: {path} exists and is not a FIFO")
    connected = False
    stopping = False

    def _term(signum: int, frame: object) -> None:  # pod shutdown: finish the agent's stream first
        nonlocal stopping
        stopping = True
        if not connected:
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, _term)
    while not stopping:
        with path.open() as stream:  # blocks until an agent opens it for writing
            connected = True
            resume(replay(stream))
            connected = False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpupool-agent-guardian")
    parser.add_argument("--fifo", type=Path, help="serve agents on this FIFO, forever (own container)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.fifo is not None:
        _serve_fifo(args.fifo)
        return 0
    resume(replay(sys.stdin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
