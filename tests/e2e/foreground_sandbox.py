"""The embedded sandbox (moto, the ECS endpoint, the embedded API server) on a thread, for the
invoke walks: started in the foreground as `gpupool sandbox up` runs it, stopped after the body."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gpupool.sandbox.files import SandboxFiles
from gpupool.sandbox.lifecycle import SandboxInfo, run_foreground


@contextmanager
def foreground_sandbox(files: SandboxFiles) -> Iterator[SandboxInfo]:
    """Start the sandbox on a thread, yield what it announced once ready, and stop it after."""
    stop, ready = threading.Event(), threading.Event()
    started: list[SandboxInfo] = []

    def announce(info: SandboxInfo) -> None:
        started.append(info)
        ready.set()

    thread = threading.Thread(
        target=run_foreground, args=(files,), kwargs={"announce": announce, "stop": stop}
    )
    thread.start()
    try:
        assert ready.wait(60), "the sandbox did not start"
        yield started[0]
    finally:
        stop.set()
        thread.join(timeout=30)
