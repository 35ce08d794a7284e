"""The sandbox's ECS endpoint: `EcsState` behind an HTTP server that speaks the SDK's wire format.

Role: serve `POST /` as ECS does for the RPC-style API (`alibabacloud-ecs20140526` 7.x): the
action and version in the `x-acs-action` / `x-acs-version` headers (or `Action` / `Version`
query parameters), every parameter in the query string or a form body, lists flattened as
`Tag.1.Key` / `InstanceId.1` (`unflatten` rebuilds them), answers as JSON; errors as HTTP
4xx/5xx with `{"RequestId", "HostId", "Code", "Message"}`. The request must carry an
`Authorization` header naming the sandbox's access key id (the signature itself is not
checked). `GET /` answers 200 so a readiness probe sees the server up.

Must not: be imported by code that runs in the cloud, listen anywhere but the host it is
given (127.0.0.1 by default), or log request parameters (user data may hold secrets).
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from gpupool.sandbox.ecs_network import EcsFault
from gpupool.sandbox.ecs_state import EcsState

__all__ = ["API_VERSION", "SANDBOX_ACCESS_KEY_ID", "SANDBOX_ACCESS_KEY_SECRET", "EcsEndpoint", "unflatten"]

API_VERSION = "2014-05-26"
SANDBOX_ACCESS_KEY_ID = "sandbox-access-key-id"
SANDBOX_ACCESS_KEY_SECRET = "sandbox-access-key-secret"  # a dummy, as moto's "testing"
_CREDENTIAL = re.compile(r"Credential=([^,/\s]+)")
_MAX_BODY = 1 << 20


def unflatten(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Rebuild flattened parameters: `[("Tag.1.Key", "a"), ("SystemDisk.Size", "40")]` →
    `{"Tag": [{"Key": "a"}], "SystemDisk": {"Size": "40"}}`.

    Numbered segments (1-based) become list positions, in order; the rest nested maps.
    """
    tree: dict[str, Any] = {}
    for key, value in pairs:
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value
    result: dict[str, Any] = _lists(tree)
    return result


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    converted = {key: _lists(value) for key, value in node.items()}
    if converted and all(key.isdigit() for key in converted):
        return [converted[key] for key in sorted(converted, key=int)]
    return converted


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # parameters may carry user data
        return

    def do_GET(self) -> None:
        self._answer(200, {"service": "gpupool sandbox ECS", "region": self.server.state.region})

    def do_POST(self) -> None:
        request_id = "sandbox"
        try:
            action, params = self._read()
            body = self.server.state.call(action, params)
            request_id = str(body.get("RequestId") or request_id)
            self._answer(200, body)
        except EcsFault as fault:
            self._answer(
                fault.status,
                {
                    "RequestId": request_id,
                    "HostId": "ecs.sandbox.local",
                    "Code": fault.code,
                    "Message": fault.message,
                },
            )

    def _read(self) -> tuple[str, dict[str, Any]]:
        split = urllib.parse.urlsplit(self.path)
        pairs = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
        length = int(self.headers.get("content-length") or 0)
        if length > _MAX_BODY:
            raise EcsFault("InvalidParameter", "the request body is too large")
        if length:
            text = self.rfile.read(length).decode("utf-8", errors="replace")
            if "json" in (self.headers.get("content-type") or ""):
                raise EcsFault("InvalidParameter", "ECS RPC requests carry form data, not JSON")
            pairs += urllib.parse.parse_qsl(text, keep_blank_values=True)
        query = dict(pairs)
        action = self.headers.get("x-acs-action") or query.get("Action") or ""
        version = self.headers.get("x-acs-version") or query.get("Version") or ""
        if not action:
            raise EcsFault("MissingAction", "x-acs-action (or Action) is required")
        if version != API_VERSION:
            raise EcsFault("InvalidVersion", f"the sandbox ECS speaks {API_VERSION}, not {version or 'none'}")
        self._check_credential(query)
        skip = {
            "Action",
            "Version",
            "AccessKeyId",
            "Signature",
            "SignatureMethod",
            "SignatureNonce",
            "Format",
        }
        return action, unflatten([(key, value) for key, value in pairs if key not in skip])

    def _check_credential(self, query: dict[str, str]) -> None:
        match = _CREDENTIAL.search(self.headers.get("authorization") or "")
        key_id = match.group(1) if match else query.get("AccessKeyId")
        if not key_id:
            raise EcsFault("IncompleteSignature", "the request is not signed", 400)
        if key_id != self.server.access_key_id:
            raise EcsFault("InvalidAccessKeyId.NotFound", "the access key id does not exist", 404)

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json;charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: EcsState, access_key_id: str) -> None:
        super().__init__(address, _Handler)
        self.state = state
        self.access_key_id = access_key_id


class EcsEndpoint:
    """`with EcsEndpoint() as ecs:` serves `ecs.state` at `ecs.url` until the block ends."""

    def __init__(
        self,
        state: EcsState | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        access_key_id: str = SANDBOX_ACCESS_KEY_ID,
    ) -> None:
        self.state = state or EcsState()
        self._address = (host, port)
        self._access_key_id = access_key_id
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        server = _Server(self._address, self.state, self._access_key_id)
        self._server = server
        self._thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), name="sandbox-ecs", daemon=True
        )
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the sandbox ECS endpoint is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
