"""The HTTP face of the embedded API server (stdlib `http.server`, HTTP/1.1 keep-alive).

Parses the query (`query`), the body (JSON, or YAML for server-side apply) and hands resource
paths to `endpoints`; writes the answer as JSON (with `Warning` headers), a `Status` body on
errors, or a chunked stream of watch events. No authentication: the server binds to 127.0.0.1.

Must not: implement API semantics itself; every rule lives in `cluster` and `store`.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import yaml

from gpupool.sandbox.kubeapi import discovery, endpoints, errors, openapi, protobuf
from gpupool.sandbox.kubeapi.operations import ApiOperations
from gpupool.sandbox.kubeapi.query import Query, WriteOptions, parse_query
from gpupool.sandbox.kubeapi.routes import DiscoveryPath, parse

PROTOBUF = "application/vnd.kubernetes.protobuf"
# Bodies the embedded server cannot decode (kube-apiserver also speaks CBOR): answered 415 naming
# what it does decode, as upstream answers a type it does not speak. Protobuf is read for the kinds
# `protobuf.KINDS` names (client-go's typed clients send nothing else for built-in kinds).
UNDECODED_MEDIA_TYPES = ("application/cbor",)
DECODED_MEDIA_TYPES = ("application/json", "application/yaml", PROTOBUF)

JsonObject = dict[str, Any]


class KubeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], cluster: ApiOperations) -> None:
        super().__init__(address, KubeRequestHandler)
        self.cluster = cluster

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request (a closed watch, an exiting process) is normal for an
        API server: say nothing. Anything else is a bug worth the default traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class KubeRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without it each response waits ~40 ms
    server: KubeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a sandbox serving thousands of requests must not flood the terminal."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # ----- plumbing ------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        try:
            url = urlsplit(self.path)
            query = parse_query(url.query)
            options = query.write_options()
            body = self._read_body()
            answer = self._answer(method, url.path.rstrip("/") or "/", query, options, body)
            if isinstance(answer, tuple):
                self._send_json(*answer, warnings=options.warnings)
            else:
                self._stream(answer)
        except errors.ApiError as error:
            self._send_json(error.code, error.status_body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug must reach the client as a 500 Status, not kill the thread
            traceback.print_exc()
            self._send_json(
                500, errors.ApiError(500, "InternalError", f"internal error: {exc}").status_body()
            )

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0:
            return None
        raw = self.rfile.read(length)
        if self._content_type() in UNDECODED_MEDIA_TYPES:
            raise errors.unsupported_media_type(DECODED_MEDIA_TYPES)
        if self._content_type() == PROTOBUF:
            try:
                return protobuf.decode(raw)
            except protobuf.ProtobufError as exc:
                raise errors.ApiError(415, "UnsupportedMediaType", str(exc)) from exc
        if self._content_type() == endpoints.APPLY_PATCH:
            try:  # server-side apply sends YAML (JSON is YAML too)
                return yaml.safe_load(raw)
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"the request body is not valid YAML: {exc}") from exc
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise errors.bad_request(f"the request body is not valid JSON: {exc}") from exc

    def _send_json(self, code: int, payload: JsonObject | bytes, warnings: list[str] | None = None) -> None:
        # kube-apiserver's JSON encoder ends every body with a newline (Go's json.Encoder).
        data = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
        if data[-1:] in (b"}", b"]"):
            data += b"\n"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for warning in warnings or []:
            self.send_header("Warning", '299 - "' + warning.replace('"', '\\"') + '"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, lines: Iterator[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for line in lines:
                self._chunk(line)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # ----- routing -------------------------------------------------------------------------
    def _answer(
        self, method: str, path: str, query: Query, options: WriteOptions, body: Any
    ) -> endpoints.Answer:
        accept = self.headers.get("Accept", "")
        if path in ("/healthz", "/readyz", "/livez"):
            return 200, b"ok"
        if path == "/version":
            return 200, discovery.VERSION_INFO
        if path.startswith("/openapi/"):
            found = openapi.document(path, accept, self.server.cluster.registry)
            if found is None:
                raise endpoints.no_such_path()
            return 200, found
        target = parse(path)
        if isinstance(target, DiscoveryPath):
            return 200, self._discovery(target)
        if target is None:
            raise endpoints.no_such_path()
        request = endpoints.Request(
            method=method,
            target=target,
            query=query,
            options=options,
            body=body,
            accept=accept,
            content_type=self._content_type(),
            authorization=self.headers.get("Authorization") or "",
        )
        return endpoints.answer(self.server.cluster, request)

    def _content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip()

    def _discovery(self, target: DiscoveryPath) -> JsonObject:
        registry = self.server.cluster.registry
        found: JsonObject | None
        if target.group == "" and target.version is None:
            host, port = self.server.server_address[:2]
            found = discovery.core_versions(f"{host!s}:{port}")
        elif target.group is None:
            found = discovery.group_list(registry)
        elif target.version is None:
            found = discovery.group(registry, target.group)
        else:
            found = discovery.resource_list(registry, target.group, target.version)
        if found is None:
            raise endpoints.no_such_path()
        return found
