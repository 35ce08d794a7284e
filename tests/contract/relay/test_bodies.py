"""Hostile bodies on every relay route: too large (by Content-Length, or streamed without one), nested
200,000 deep, YAML alias bombs — each refused with 413 / 400 (the extender protocol's `Error` on
filter and bind), never a 500 and never read whole; parsing runs in the thread pool, not on the
event loop; and the real server (uvicorn) answers 413 to a declared 64 MiB body it never receives."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from gpupool_incluster.relay import app as relay_app
from gpupool_incluster.relay.app import create_app
from gpupool_incluster.relay.bodies import MAX_BODY, MAX_MANIFEST, json_depth
from gpupool_incluster.relay.hub import SchedulerHub

sys.path.insert(0, str(Path(__file__).parent))
from relay_builders import FakeWriter, gpu_model, pool_model, tf_pod

CHUNK = 64 << 10
DEEP = b"[" * 200_000 + b"]" * 200_000
ROUTES = [
    "/scheduler/filter",
    "/scheduler/prioritize",
    "/scheduler/bind",
    "/mutate-pod",
    "/api/simulate-schedule",
]
# What each route answers a body it cannot read: (status, where the message is)
EXTENDER_ERROR = {"/scheduler/filter", "/scheduler/bind"}


@pytest.fixture
def hub() -> SchedulerHub:
    hub = SchedulerHub(FakeWriter())
    hub.apply_pool(pool_model())
    hub.apply_gpu(gpu_model("a-0", "a"))
    return hub


def _limit(route: str) -> int:
    return MAX_MANIFEST if route == "/api/simulate-schedule" else MAX_BODY


class Pulled:
    """A streamed request body that counts the bytes the server actually pulled."""

    def __init__(self, total: int) -> None:
        self.total, self.pulled = total, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.pulled < self.total:
            self.pulled += CHUNK
            yield b" " * CHUNK


async def _post(hub: SchedulerHub, route: str, **request: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://relay") as http:
        return await http.post(route, **request)


def _error_of(route: str, answer: httpx.Response) -> str:
    body = answer.json()
    return str(body["Error"] if route in EXTENDER_ERROR else body["error"])


@pytest.mark.parametrize("route", ROUTES)
def test_a_declared_length_over_the_limit_is_refused_before_a_byte_is_read(
    route: str, hub: SchedulerHub
) -> None:
    body = Pulled(64 << 20)
    answer = asyncio.run(_post(hub, route, content=body, headers={"content-length": str(64 << 20)}))
    assert answer.status_code == 413 and "larger than the limit" in _error_of(route, answer)
    assert body.pulled == 0


@pytest.mark.parametrize("route", ROUTES)
def test_a_streamed_body_is_cut_off_once_it_passes_the_limit(route: str, hub: SchedulerHub) -> None:
    body = Pulled(64 << 20)  # no Content-Length: chunked
    answer = asyncio.run(_post(hub, route, content=body))
    assert answer.status_code == 413 and "larger than the limit" in _error_of(route, answer)
    assert body.pulled <= _limit(route) + CHUNK


@pytest.mark.parametrize("route", ROUTES)
def test_json_nested_200000_deep_is_a_clear_refusal_not_a_500(route: str, hub: SchedulerHub) -> None:
    answer = asyncio.run(_post(hub, route, content=DEEP, headers={"content-type": "application/json"}))
    expected = 200 if route in EXTENDER_ERROR else 400
    assert answer.status_code == expected
    assert "nests 200000 levels deep; at most 100" in _error_of(route, answer)


@pytest.mark.parametrize("route", ["/scheduler/filter", "/mutate-pod"])
def test_a_malformed_content_length_is_a_400(route: str, hub: SchedulerHub) -> None:
    answer = asyncio.run(_post(hub, route, content=b"{}", headers={"content-length": "2; drop"}))
    assert answer.status_code in (400, 200) and "is not a number of bytes" in _error_of(route, answer)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (b"kind: Pod\nspec: " + b"[" * 200_000, "deeper than 100 levels"),
        (
            b"a: &a ['x','x','x','x','x','x','x','x','x']\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
            b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nkind: Pod\n",
            "anchors and aliases are not accepted",
        ),
    ],
    ids=["deep", "alias-bomb"],
)
def test_hostile_yaml_is_refused_by_simulate_schedule(
    manifest: bytes, message: str, hub: SchedulerHub
) -> None:
    answer = asyncio.run(_post(hub, "/api/simulate-schedule", content=manifest))
    assert answer.status_code == 400 and message in answer.json()["error"]


def test_brackets_inside_strings_do_not_count_as_nesting(hub: SchedulerHub) -> None:
    pod = tf_pod("p", extra={"note": "[" * 50_000 + '"{' * 1_000})
    assert json_depth(b'{"a": "[[[[\\"[[", "b": [1, {"c": []}]}') == 4
    answer = asyncio.run(_post(hub, "/scheduler/filter", json={"Pod": pod, "NodeNames": ["a"]}))
    assert answer.status_code == 200 and answer.json()["Error"] == "" and answer.json()["NodeNames"] == ["a"]


def test_parsing_runs_in_the_thread_pool_not_on_the_event_loop(
    hub: SchedulerHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    where: list[bool] = []
    parse = relay_app.parse_json

    def recording(body: bytes, **options: Any) -> Any:
        try:
            asyncio.get_running_loop()
            where.append(True)  # on the event loop
        except RuntimeError:
            where.append(False)
        return parse(body, **options)

    monkeypatch.setattr(relay_app, "parse_json", recording)
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u"}}
    for route, body in [
        ("/scheduler/filter", {"Pod": tf_pod("p"), "NodeNames": ["a"]}),
        ("/scheduler/prioritize", {"Pod": tf_pod("p"), "NodeNames": ["a"]}),
        ("/scheduler/bind", {"PodName": "p", "PodNamespace": "team", "Node": "a"}),
        ("/mutate-pod", review),
    ]:
        asyncio.run(_post(hub, route, json=body))
    assert where == [False, False, False, False]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_the_real_server_answers_413_to_a_declared_64_mib_body_it_never_receives(hub: SchedulerHub) -> None:
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(hub), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(
                b"POST /mutate-pod HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
                b"Content-Length: 67108864\r\n\r\n{"  # one byte of the 64 MiB announced
            )
            answer = raw.recv(4096)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    finally:
        server.should_exit = True
        thread.join(10)
