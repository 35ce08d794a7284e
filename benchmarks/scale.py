"""Cost at scale (issues 13 and 23): each function's invocations on a big cluster, against the goals.

For each size (GPU nodes; default 100, 1,000 and 5,000), a world of that many 8-GPU nodes with
their GPUNodeClaims, GPUNodes, GPU objects and 8 pods each (`scale_world`, 40,000 pods at 5,000
nodes) is loaded into the embedded Kubernetes API server, which serves it from its own process
(`scale_server`). Then the real Lambda handlers (`gpupool.handlers.aws_lambda.make_handler`) run
on the real service and the real Kubernetes adapter (`KubeCluster`, over HTTP as in production,
kubeconfig access, the official client), with the cloud in memory (`scale_compute`): one scheduled
launch, then one scheduled bind (the periodic sweep), then one scheduled compact. Each function
runs in its own process, as its own Lambda does, and gets its event twice: the first invocation
after the cold start's set-up (client built, code imported, nothing listed yet), then "again" (the
same warm function, which brings what it listed up to date and finds nothing left to do). Printed
per invocation, each with its verdict against the goal:

- wall: seconds for the handler call;
- cpu: the function process's own CPU seconds during the call (all its threads);
- API calls: requests the server answered, and which with --calls (verb and resource, as RBAC
  names them);
- read MB: response bytes the server sent to the function;
- peak RSS: the function process's resident-set high-water mark during the call (Linux VmHWM,
  reset before each call through /proc/self/clear_refs), i.e. what Lambda reports as memory
  used;
- server cpu: the API server process's CPU seconds while it served the call (its own serving
  time, apart from the function's; the wall includes waiting for it).

Goals (issue 23): at every size, each invocation within 1 s wall of which ≤ 0.5 s the function's
CPU, ≤ 256 MB peak RSS, ≤ 20 API calls and ≤ 20 MB read; at 100 nodes, within 0.3 s wall. Usage:

    .venv/bin/python benchmarks/scale.py [--sizes 100,1000,5000] [--pools 2] [--calls]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scale_compute import ScaleCompute
from benchmarks.scale_server import Counters, WorldServer
from benchmarks.scale_world import NOW, ScaleWorld

FUNCTIONS = ("launch", "bind", "compact")


@dataclasses.dataclass(frozen=True)
class Goal:
    """What an invocation must stay within (issue 23's acceptance)."""

    wall_s: float = 1.0
    cpu_s: float = 0.5
    peak_mb: float = 256
    calls: int = 20
    read_mb: float = 20

    @classmethod
    def at(cls, nodes: int) -> Goal:
        return cls(wall_s=0.3) if nodes <= 100 else cls()


@dataclasses.dataclass(frozen=True)
class Measured:
    function: str
    status: str
    wall_s: float
    cpu_s: float
    counters: Counters
    peak_mb: float
    delta_mb: float

    @property
    def calls(self) -> int:
        return sum(self.counters.calls.values())

    @property
    def read_mb(self) -> float:
        return self.counters.response_bytes / 1e6

    def missed(self, goal: Goal) -> list[str]:
        """The goals this invocation missed (empty: every one met), and whether it was handled."""
        checks = (
            ("wall", self.wall_s, goal.wall_s),
            ("cpu", self.cpu_s, goal.cpu_s),
            ("RSS", self.peak_mb, goal.peak_mb),
            ("calls", self.calls, goal.calls),
            ("read", self.read_mb, goal.read_mb),
        )
        missed = [name for name, value, limit in checks if value > limit]
        return missed if self.status == "handled" else ["not handled", *missed]


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set


class _FixedClock:
    def now(self) -> Any:
        return NOW


def function_deps(cloud: ScaleCompute, kubeconfig: str) -> Any:
    """One function's deps, as its own Lambda builds them (own client, own lists), on the shared cloud."""
    from gpupool.adapters.aws.wiring import build_aws_deps

    environ = {
        "GPUPOOL_CLUSTER_NAME": "scale",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "KUBECONFIG": kubeconfig,
        "GPUPOOL_KUBE_TIMEOUT": "120s",
    }
    deps = build_aws_deps(environ, clock=_FixedClock())
    suffixes = iter(f"{n:08x}" for n in range(1, 1_000_000))
    return dataclasses.replace(
        deps,
        compute=cloud,
        new_suffix=lambda: next(suffixes),
        holder="gpupool-scale-benchmark",
    )


def scheduled_event(function: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": f"scale-{function}",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [f"arn:aws:events:us-east-1:123456789012:rule/gpupool-{function}"],
        "detail": {},
    }


def _invoke(handler: Callable[[Any, Any], dict[str, Any]], label: str, server: _Counts) -> Measured:
    function = label.split()[0]
    server.counters()  # what came before is not this call's
    before = _status_kb("VmRSS")
    _reset_peak()
    cpu = time.process_time()
    began = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the EMF metrics lines
        result = handler(scheduled_event(function), None)
    wall = time.perf_counter() - began
    cpu = time.process_time() - cpu
    peak = _status_kb("VmHWM")
    status = str(result.get("status"))
    return Measured(label, status, wall, cpu, server.counters(), peak / 1024, (peak - before) / 1024)


def _function_process(function: str, kubeconfig: str, world: ScaleWorld, conn: Any) -> None:
    """One function's Lambda: its own process, deps and client; the event twice."""
    from gpupool.handlers.aws_lambda import make_handler

    server = _Counts(conn)
    cloud = ScaleCompute(world.instances(), cluster="scale", launch_time=NOW)
    cloud.apply(conn.recv())  # the instances earlier functions launched or terminated
    deps = function_deps(cloud, kubeconfig)
    deps.cluster.get_pool("pool-0")  # warm: client and connection built, as in a warm Lambda
    importlib.import_module(f"gpupool.service.{function}")  # and the code imported
    handler = make_handler(function, lambda: deps)  # type: ignore[arg-type]
    measured = [_invoke(handler, function, server), _invoke(handler, f"{function} again", server)]
    conn.send(("done", measured, cloud.changes()))


def run_size(world: ScaleWorld, directory: Path) -> tuple[WorldServer, list[Measured]]:
    """Each function in its own process, in order (launch, bind, compact), its event twice."""
    server = WorldServer(world, directory)
    context = multiprocessing.get_context("fork")
    measured: list[Measured] = []
    changes: dict[str, Any] = {}
    try:
        for function in FUNCTIONS:
            conn, child_conn = context.Pipe()
            child = context.Process(
                target=_function_process, args=(function, server.kubeconfig, world, child_conn)
            )
            child.start()
            conn.send(changes)
            while True:
                message = conn.recv()
                if message == "counters":
                    conn.send(server.counters())
                    continue
                _done, found, changed = message
                measured.extend(found)
                changes.update(changed)
                break
            child.join()
        return server, measured
    finally:
        server.stop()


class _Counts:
    """The server's counters, asked for through the parent (which holds the server's pipe)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def counters(self) -> Counters:
        self._conn.send("counters")
        counted: Counters = self._conn.recv()
        return counted


def _table(world: ScaleWorld, server: WorldServer, measured: list[Measured], *, calls: bool) -> str:
    objects = ", ".join(f"{count:,} {plural}" for plural, count in sorted(server.created.items()))
    goal = Goal.at(world.nodes)
    lines = [
        f"== {world.nodes:,} GPU nodes, {world.pools} pools: {objects} (loaded in {server.load_s:.0f} s)",
        f"   goal: ≤ {goal.wall_s:g} s wall, ≤ {goal.cpu_s:g} s cpu, ≤ {goal.peak_mb:g} MB peak RSS,"
        f" ≤ {goal.calls} API calls, ≤ {goal.read_mb:g} MB read",
        f"{'function':<13} {'status':<8} {'wall s':>7} {'cpu s':>6} {'API calls':>9} {'read MB':>8}"
        f" {'peak RSS MB':>11} {'Δ MB':>6} {'server cpu s':>12}  verdict",
    ]
    for m in measured:
        missed = m.missed(goal)
        verdict = "met" if not missed else "MISSED: " + ", ".join(missed)
        lines.append(
            f"{m.function:<13} {m.status:<8} {m.wall_s:>7.2f} {m.cpu_s:>6.2f} {m.calls:>9,}"
            f" {m.read_mb:>8.1f} {m.peak_mb:>11.0f} {m.delta_mb:>6.0f}"
            f" {m.counters.server_cpu_s:>12.2f}  {verdict}"
        )
        if calls:
            listed = ", ".join(f"{name} ×{count}" for name, count in sorted(m.counters.calls.items()))
            lines.append(f"{'':<13} calls: {listed}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000", help="GPU node counts, comma-separated")
    parser.add_argument("--pools", type=int, default=2, help="GPUPools the nodes are split over")
    parser.add_argument("--calls", action="store_true", help="list each invocation's API calls")
    args = parser.parse_args(argv)
    # The service's INFO lines would fill the table (set here, not at import: a test importing
    # this module must not change how the handlers log in the rest of its session).
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        worlds = [ScaleWorld(nodes=n, pools=args.pools) for n in sizes]
    except ValueError as error:
        parser.error(f"--sizes/--pools: {error}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    missed = 0
    with tempfile.TemporaryDirectory(prefix="gpupool-scale-") as directory:
        for world in worlds:
            server, measured = run_size(world, Path(directory))
            print(_table(world, server, measured, calls=args.calls), flush=True)
            missed += sum(1 for m in measured if m.missed(Goal.at(world.nodes)))
    total = len(worlds) * 2 * len(FUNCTIONS)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(
        f"result: {total - missed} of {total} invocations met their goal"
        + ("" if not missed else " — MISSED")
    )
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
