"""What a hostile body costs the relay's webhook listener: peak memory and time, against a naive reader.

Starts two servers as separate processes (uvicorn, plain HTTP on 127.0.0.1): the relay app
(`create_app`, webhook surface) and, as the independent reference, a five-line Starlette app that
reads the whole body (`await request.body()`) and then checks its size — what the relay did
before issue 22. Each gets the same requests, one at a time, and after each the server's peak
resident memory (`VmHWM` from /proc/<pid>/status) is read:

1. a 64 MiB POST with its Content-Length (the issue's attack);
2. a 64 MiB POST sent chunked, without a Content-Length;
3. a 200,000-deep JSON array (the answer's status is printed: never 500).

Prints, per server and request, the status, the seconds to the answer and the growth of peak
memory over the idle server; then the verdict against the target (the relay's growth for 1 and 2
at most 16 MiB — its 8 MiB limit plus chunks in flight — and no 5xx), which fails if the relay
buffers the body, and the reference's figures, which show the measurement sees buffering.

    .venv/bin/python benchmarks/relay_bodies.py
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
TARGET_GROWTH_MIB = 16
ATTACK = 64 << 20

RELAY_SERVER = """
import sys, uvicorn
sys.path[:0] = [{incluster!r}, {tests!r}]
from relay_builders import FakeWriter, pool_model
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.hub import SchedulerHub
hub = SchedulerHub(FakeWriter()); hub.apply_pool(pool_model())
uvicorn.run(create_app(hub, surfaces={{"webhook"}}), host="127.0.0.1", port={port}, log_level="error")
"""

NAIVE_SERVER = """
import json, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
async def mutate(request):
    body = await request.body()
    if len(body) > 8 << 20:
        return JSONResponse({{"error": "too large"}}, status_code=413)
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return JSONResponse({{"error": "bad"}}, status_code=400)
    return JSONResponse({{}})
uvicorn.run(Starlette(routes=[Route("/mutate-pod", mutate, methods=["POST"])]),
            host="127.0.0.1", port={port}, log_level="error")
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/<pid>/status")


def _chunks(total: int, size: int = 64 << 10) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        sent += size
        yield b" " * size


def _start(source: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    code = textwrap.dedent(source).format(
        port=port, incluster=str(ROOT / "incluster"), tests=str(ROOT / "tests" / "contract" / "relay")
    )
    process = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    url = f"http://127.0.0.1:{port}/mutate-pod"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.post(url, content=b"{}", timeout=1)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start")


def _measure(name: str, source: str) -> dict[str, tuple[int, float, float]]:
    process, url = _start(source)
    results: dict[str, tuple[int, float, float]] = {}
    try:
        idle = _peak_kib(process.pid)
        requests = {
            "64 MiB with Content-Length": {
                "content": _chunks(ATTACK),
                "headers": {"content-length": str(ATTACK)},
            },
            "64 MiB chunked": {"content": _chunks(ATTACK)},
            "200,000-deep JSON": {"content": b"[" * 200_000 + b"]" * 200_000},
        }
        for label, request in requests.items():
            started = time.perf_counter()
            try:
                status = httpx.post(url, timeout=120, **request).status_code  # type: ignore[arg-type]
            except httpx.HTTPError:
                status = 0  # the server closed the connection while the client was still sending
            seconds = time.perf_counter() - started
            growth = (_peak_kib(process.pid) - idle) / 1024
            results[label] = (status, seconds, growth)
            print(
                f"{name:<10} {label:<28} HTTP {status or 'closed'}  {seconds:6.2f} s  peak +{growth:7.1f} MiB"
            )
    finally:
        process.terminate()
        process.wait(10)
    return results


def main() -> int:
    relay = _measure("relay", RELAY_SERVER)
    naive = _measure("reference", NAIVE_SERVER)
    worst = max(relay[k][2] for k in ("64 MiB with Content-Length", "64 MiB chunked"))
    server_errors = [k for k, (status, _, _) in relay.items() if status >= 500]
    met = worst <= TARGET_GROWTH_MIB and not server_errors
    print(
        f"verdict: relay peak growth {worst:.1f} MiB for a 64 MiB body (target <= {TARGET_GROWTH_MIB} MiB), "
        f"5xx answers: {server_errors or 'none'} — {'met' if met else 'NOT met'}"
    )
    reference = max(naive[k][2] for k in ("64 MiB with Content-Length", "64 MiB chunked"))
    print(f"reference (reads the whole body first): peak growth {reference:.1f} MiB for the same bodies")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
