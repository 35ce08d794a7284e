"""The HTTP face of the embedded API server (stdlib `http.server`, HTTP/1.1 keep-alive).

Turns each request into a `Cluster` call and the answer into JSON: 200/201/202 with the
object, a `Status` body on errors, a chunked stream of events for `?watch=true`, and a
`Table` when kubectl asks for one. No authentication: the server binds to 127.0.0.1.

Must not: implement API semantics itself; every rule lives in `cluster` and `store`.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gpupool.local.kubeapi import discovery, errors, reviews, tables
from gpupool.local.kubeapi.cluster import Cluster
from gpupool.local.kubeapi.resources import ResourceType
from gpupool.local.kubeapi.routes import DiscoveryPath, ResourcePath, parse
from gpupool.local.kubeapi.selectors import parse_field_selector, parse_label_selector
from gpupool.local.kubeapi.watch import watch_lines

JsonObject = dict[str, Any]
DEFAULT_WATCH_SECONDS = 1800.0


class KubeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], cluster: Cluster) -> None:
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
            query = {key: values[-1] for key, values in parse_qs(url.query, keep_blank_values=True).items()}
            body = self._read_body()
            if query.get("dryRun"):
                raise errors.bad_request("dryRun is not supported by the embedded API server")
            answer = self._answer(method, url.path.rstrip("/") or "/", query, body)
            if isinstance(answer, tuple):
                self._send_json(*answer)
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
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise errors.bad_request(f"the request body is not valid JSON: {exc}") from exc

    def _send_json(self, code: int, payload: JsonObject | bytes) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
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
        self, method: str, path: str, query: dict[str, str], body: Any
    ) -> tuple[int, JsonObject | bytes] | Iterator[bytes]:
        cluster = self.server.cluster
        if path in ("/healthz", "/readyz", "/livez"):
            return 200, b"ok"
        if path == "/version":
            return 200, discovery.VERSION_INFO
        if path == "/openapi/v2" and "protobuf" in self.headers.get("Accept", ""):
            # An empty protobuf message is a valid, empty OpenAPI document: kubectl then
            # skips client-side schema validation instead of refusing `create -f`.
            return 200, discovery.EMPTY_OPENAPI_V2
        review = reviews.answer(cluster, method, path, body, self.headers.get("Authorization") or "")
        if review is not None:
            return review
        target = parse(path)
        if isinstance(target, DiscoveryPath):
            return 200, self._discovery(target)
        if target is None:
            raise _no_such_path()
        return self._resource(cluster, method, target, query, body)

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
            raise _no_such_path()
        return found

    def _resource(
        self, cluster: Cluster, method: str, target: ResourcePath, query: dict[str, str], body: Any
    ) -> tuple[int, JsonObject | bytes] | Iterator[bytes]:
        rt = cluster.resolve(target.group, target.version, target.plural)
        if rt.namespaced is False and target.namespace is not None:
            raise _no_such_path()
        namespace = target.namespace if rt.namespaced else ""
        sub = target.subresource
        if sub is not None and not (sub == "status" and rt.has_status) and sub not in rt.subresources:
            raise _no_such_path()
        if target.name is None:
            return self._collection(
                cluster, method, rt, target.namespace if rt.namespaced else None, query, body
            )
        assert namespace is not None
        if rt.namespaced and target.namespace is None:
            raise _no_such_path()
        if method == "GET" and sub in (None, "status"):
            obj = cluster.get(rt, namespace, target.name)
            if tables.wants_table(self.headers.get("Accept", "")):
                meta = obj.get("metadata", {})
                return 200, tables.table(
                    [obj],
                    rt=rt,
                    resource_version=meta.get("resourceVersion", ""),
                    now=cluster.clock.now(),
                )
            return 200, obj
        if method == "PUT" and sub in (None, "status"):
            return 200, cluster.update(rt, namespace, target.name, body, subresource=sub)
        if method == "PATCH" and sub in (None, "status"):
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            return 200, cluster.patch(rt, namespace, target.name, body, content_type, subresource=sub)
        if method == "DELETE" and sub is None:
            options = dict(body) if isinstance(body, dict) else {}
            if "propagationPolicy" in query:
                options["propagationPolicy"] = query["propagationPolicy"]
            last, gone = cluster.delete(rt, namespace, target.name, options)
            return (200 if gone else 202), last
        if method == "POST" and sub == "binding":
            return 201, cluster.bind(namespace, target.name, body)
        if method == "POST" and sub == "eviction":
            return 201, cluster.evict(namespace, target.name)
        raise errors.method_not_allowed(f"{method} is not supported on this path")

    def _collection(
        self,
        cluster: Cluster,
        method: str,
        rt: ResourceType,
        namespace: str | None,
        query: dict[str, str],
        body: Any,
    ) -> tuple[int, JsonObject | bytes] | Iterator[bytes]:
        if method == "POST":
            if rt.namespaced and namespace is None:
                raise errors.method_not_allowed("create a namespaced object under /namespaces/NAME/")
            return 201, cluster.create(rt, namespace, body)
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""), rt.field_paths, rt.kind)
        if method == "GET" and query.get("watch") in ("true", "1"):
            timeout = _number(query, "timeoutSeconds") or DEFAULT_WATCH_SECONDS
            return watch_lines(
                cluster,
                rt,
                namespace,
                labels,
                fields,
                resource_version=query.get("resourceVersion", ""),
                timeout_seconds=timeout,
                bookmarks=query.get("allowWatchBookmarks") in ("true", "1"),
            )
        if method == "GET":
            if tables.wants_table(self.headers.get("Accept", "")):
                entries, rv = cluster.matching_entries(rt, namespace, labels, fields)
                return 200, tables.table(
                    [e.obj for e in entries], rt=rt, resource_version=str(rv), now=cluster.clock.now()
                )
            limit = int(_number(query, "limit"))
            return 200, cluster.list_body(
                rt, namespace, labels, fields, limit=limit, continue_token=query.get("continue", "")
            )
        if method == "DELETE":
            entries, _rv = cluster.matching_entries(rt, namespace, labels, fields)
            options = dict(body) if isinstance(body, dict) else {}
            removed = []
            for entry in entries:
                meta = entry.obj["metadata"]
                removed.append(cluster.delete(rt, meta.get("namespace", ""), meta["name"], options)[0])
            return 200, {
                "kind": rt.list_kind_name,
                "apiVersion": rt.api_version,
                "metadata": {},
                "items": removed,
            }
        raise errors.method_not_allowed(f"{method} is not supported on a collection")


def _number(query: dict[str, str], name: str) -> float:
    """A non-negative numeric query parameter (0 when absent); anything else is a 400."""
    raw = query.get(name) or "0"
    try:
        value = float(raw)
    except ValueError as exc:
        raise errors.bad_request(f"{name} must be a number, not {raw!r}") from exc
    if value < 0:
        raise errors.bad_request(f"{name} must not be negative")
    return value


def _no_such_path() -> errors.ApiError:
    return errors.ApiError(404, "NotFound", "the server could not find the requested resource")
