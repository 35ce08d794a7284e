"""`gpupool status --watch` in a real terminal (tmux, Debian's package): it draws the sandbox's
pools from its watches, redraws in place when an object changes, shows a dropped connection in
its header and catches up when the connection is back (a change made meanwhile appears), and
ends on Ctrl-C with exit 0 and the terminal given back. The connection is dropped by a loopback
TCP relay between the command and the embedded API server (`_Relay`: while paused it accepts and
closes at once, and cuts the streams it carries — what a restarting API server or a lost network
path looks like to a client). The screen is read with `tmux capture-pane`; waits poll it with a
deadline (no timing is asserted). Skipped, saying so, where tmux is not installed."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from gpupool.sandbox.demo.world import DemoWorld
from tests.e2e.status_worlds import PROVISIONED_FOR, provisioned_world

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"),
]
GPUPOOL = str(Path(sys.executable).parent / "gpupool")
GROUP = "tensor-fusion.ai"
POOL = "tensor-fusion-elastic"


class _Relay:
    """A loopback TCP relay to `target`; `pause()` drops every connection and refuses new ones
    (accepts and closes), `resume()` relays again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.paused = threading.Event()
        self.closed = threading.Event()
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.paused.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def pause(self) -> None:
        self.paused.set()
        with self._lock:
            for end in self._open:
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()
            self._open.clear()

    def resume(self) -> None:
        self.paused.clear()

    def close(self) -> None:
        self.closed.set()
        self.pause()
        self.listener.close()


class _Terminal:
    """One tmux server of our own (its own socket), running one command in a 200×60 window."""

    def __init__(self, command: str) -> None:
        self.socket = f"gpupool-status-{os.getpid()}"
        env = {**os.environ, "LANG": "C.UTF-8", "TERM": "xterm-256color"}
        env.pop("KUBECONFIG", None)
        # The view sizes itself to its tty, the 200×60 window, unless these say otherwise (pytest-xdist's
        # workers carry COLUMNS=80 and LINES=24).
        for sizing in ("COLUMNS", "LINES"):
            env.pop(sizing, None)
        self._tmux("new-session", "-d", "-s", "status", "-x", "200", "-y", "60", command, env=env)

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        result = subprocess.run(
            ["tmux", "-u", "-L", self.socket, *args], capture_output=True, text=True, timeout=30, env=env
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "status")

    def wait_for(self, *texts: str, absent: str | None = None, seconds: float = 60) -> str:
        deadline = time.monotonic() + seconds
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if all(t in shown for t in texts) and (absent is None or absent not in shown):
                return shown
            time.sleep(0.25)
        raise AssertionError(f"the screen never showed {texts} (without {absent!r}); it shows:\n{shown}")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "status", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture()
def world() -> Iterator[DemoWorld]:
    start = datetime.now(UTC).replace(microsecond=0) - PROVISIONED_FOR
    with provisioned_world(start=start) as the_world:
        yield the_world


def test_watch_redraws_on_a_change_survives_a_dropped_connection_and_ends_on_ctrl_c(
    world: DemoWorld, tmp_path: Path
) -> None:
    config = yaml.safe_load(Path(world.environ["KUBECONFIG"]).read_text())
    server = config["clusters"][0]["cluster"]["server"]
    host, port = server.removeprefix("http://").split(":")
    relay = _Relay((host, int(port)))
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{relay.port}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    command = f"{GPUPOOL} status --watch --refresh 1 --kubeconfig {kubeconfig}; echo EXIT=$?; sleep 60"
    terminal = _Terminal(command)
    try:
        terminal.wait_for(f"pool {POOL}", "watch: live", "claims (GPUNodeClaim): Bound 2 · Creating 1")
        node = world.objects.list("", "nodes")[0]["metadata"]["name"]
        world.objects.patch("", "nodes", node, {"spec": {"unschedulable": True}})
        terminal.wait_for("cordoned")  # redrawn from the watch

        relay.pause()
        terminal.wait_for("watch: reconnecting", absent="watch: live")
        late = {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool", "metadata": {"name": "late-pool"}}
        world.objects.create(GROUP, "gpupools", late)  # while the connection is down
        relay.resume()
        terminal.wait_for("pool late-pool", "watch: live", seconds=90)

        terminal.keys("C-c")
        after = terminal.wait_for("EXIT=0")
        assert "Traceback" not in after
        assert "gpupool status: stopped watching" in after
    finally:
        terminal.close()
        relay.close()
