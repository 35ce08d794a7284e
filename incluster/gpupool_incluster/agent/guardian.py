"""The throttle guardian: a tiny process that resumes every process the agent left stopped.

Role: started by the agent (`python -m gpupool_incluster.agent.guardian`, in its own session), it
reads "S <pid>" (stopped) and "C <pid>" (continued) lines on stdin. When stdin reaches end of file
— the agent exited, crashed or was SIGKILLed, so its end of the pipe closed — it sends SIGCONT to
every pid still recorded as stopped, then exits. SIGINT and SIGTERM are ignored so that a signal
to the agent's process group cannot take the guardian down before it has done its job.

Must not: stop anything, or act before end of file.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable

__all__ = ["main", "replay"]


def replay(lines: Iterable[str]) -> set[int]:
    """The pids left stopped after a stream of S/C lines (malformed lines are ignored)."""
    stopped: set[int] = set()
    for line in lines:
        verb, _, pid_text = line.strip().partition(" ")
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if verb == "S":
            stopped.add(pid)
        elif verb == "C":
            stopped.discard(pid)
    return stopped


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for pid in sorted(replay(sys.stdin)):
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            continue  # gone already
    return 0


if __name__ == "__main__":
    sys.exit(main())
