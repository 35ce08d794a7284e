"""Cost at scale (issue 13, item 5): one launch, bind and compact invocation on a big cluster.

For each size (GPU nodes; default 100, 1,000 and 5,000), a world of that many 8-GPU nodes with
their GPUNodeClaims, GPUNodes, GPU objects and 8 pods each (`scale_world`, 40,000 pods at 5,000
nodes) is loaded into the embedded Kubernetes API server, which serves it from its own process
(`scale_server`). Then the real Lambda handlers (`gpupool.handlers.aws_lambda.make_handler`) run
on the real service and the real Kubernetes adapter (`KubeCluster`, over HTTP as in production,
kubeconfig access), with the cloud in memory (`scale_compute`): one scheduled launch, then one
scheduled bind (the periodic sweep), then one scheduled compact. Each function runs in its own
process, as its own Lambda does, and gets its event twice: the first invocation after the
cold start's set-up, then "again" (the same warm function, whose lists now reuse the objects
that did not change, finding nothing left to do). Printed per invocation:

- wall: seconds for the handler call (the function process is warm: client built, code imported);
- API calls: requests the server answered, and which (verb and resource, as RBAC names them);
- read: response bytes the server sent to the function;
- peak RSS: the function process's resident-set high-water mark during the call (Linux VmHWM,
  reset before each call through /proc/self/clear_refs), i.e. what Lambda reports as memory
  used; and Δ, that peak minus the resident set just before the call.

Goal: ≤ 1 s and ≤ 512 MB per invocation at 5,000 nodes. Usage:

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
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # the service's INFO lines would fill the table

from benchmarks.scale_compute import ScaleCompute
from benchmarks.scale_server import Counters, WorldServer
from benchmarks.scale_world import NOW, ScaleWorld

GOAL_SECONDS, GOAL_MB = 1.0, 512
FUNCTIONS = ("launch", "bind", "compact")


@dataclasses.dataclass(frozen=True)
class Measured:
    function: str
    status: str
    wall_s: float
    counters: Counters
    peak_mb: float
    delta_mb: float


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
    from gpupool.adapters.wiring import build_aws_deps

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
    began = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the EMF metrics lines
        result = handler(scheduled_event(function), None)
    wall = time.perf_counter() - began
    peak = _status_kb("VmHWM")
    status = str(result.get("status"))
    return Measured(label, status, wall, server.counters(), peak / 1024, (peak - before) / 1024)


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
    lines = [
        f"== {world.nodes:,} GPU nodes, {world.pools} pools: {objects} (loaded in {server.load_s:.0f} s)",
        f"{'function':<13} {'status':<8} {'wall s':>7} {'API calls':>9} {'read MB':>8} {'peak RSS MB':>11}"
        f" {'Δ MB':>7}  goal (≤ {GOAL_SECONDS:g} s, ≤ {GOAL_MB} MB)",
    ]
    for m in measured:
        verdict = "met" if m.wall_s <= GOAL_SECONDS and m.peak_mb <= GOAL_MB else "MISSED"
        lines.append(
            f"{m.function:<13} {m.status:<8} {m.wall_s:>7.2f} {sum(m.counters.calls.values()):>9,}"
            f" {m.counters.response_bytes / 1e6:>8.1f} {m.peak_mb:>11.0f} {m.delta_mb:>7.0f}  {verdict}"
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
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        worlds = [ScaleWorld(nodes=n, pools=args.pools) for n in sizes]
    except ValueError as error:
        parser.error(f"--sizes/--pools: {error}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="gpupool-scale-") as directory:
        for world in worlds:
            server, measured = run_size(world, Path(directory))
            print(_table(world, server, measured, calls=args.calls), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
