"""The agent's metrics listener: `/metrics` only for a caller the API server vouches for, `/healthz` for all.

Role: `MetricsServer` serves one `prometheus_client` registry on HOST:PORT (a daemon thread).
`/metrics` carries per-worker series labelled with namespace and pod, so with an `access` (a
`gpupool.adapters.kube.token_access.TokenAccess`) every scrape must carry `Authorization: Bearer
<token>` that a TokenReview authenticates and a SubjectAccessReview allows `get` on the
non-resource URL `/metrics` — what the kubelet and kube-rbac-proxy ask, and what Prometheus's
RBAC normally holds. Refusals answer 401 (no or unknown token), 403 (not allowed) or 503 (the API
server could not review it), as plain text, with nothing of the registry. `access=None` serves
`/metrics` to anyone (`--metrics-auth none`: local runs). `/healthz` answers `ok` without a token
(probes), anything else 404, any method but GET / HEAD 405.

Must not: log a token or the Authorization header, or compute a metric.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["METRICS_PATH", "MetricsAccess", "MetricsServer"]

log = logging.getLogger("gpupool.agent.metrics")
METRICS_PATH = "/metrics"


class _Denied(Protocol):
    @property
    def status(self) -> int: ...
    @property
    def message(self) -> str: ...


class MetricsAccess(Protocol):
    def check(self, authorization: str, verb: str, path: str) -> _Denied | None:
        """None when the caller may `verb` `path`; otherwise the status and one line to answer."""
        ...


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, *, access: MetricsAccess | None) -> None:
        self.registry = registry
        self.access = access
        self._server: ThreadingHTTPServer | None = None

    def start(self, host: str, port: int) -> int:
        """Listen on host:port (0: any free port) in a daemon thread; the bound port."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the request line is not worth a log line per scrape."""

            def _answer(
                self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8"
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self) -> None:
                status, body, content_type = server.answer(
                    urlsplit(self.path).path, self.headers.get("Authorization", "")
                )
                self._answer(status, body, content_type)

            do_HEAD = do_GET

            def _not_allowed(self) -> None:
                self._answer(405, b"only GET\n")

            do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="gpupool-agent-metrics", daemon=True).start()
        return int(self._server.server_address[1])

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, path: str, authorization: str) -> tuple[int, bytes, str]:
        """(status, body, content type) for a GET of `path` carrying `authorization`."""
        text = "text/plain; charset=utf-8"
        if path == "/healthz":
            return 200, b"ok\n", text
        if path != METRICS_PATH:
            return 404, b"not found\n", text
        if self.access is not None:
            denied = self.access.check(authorization, "get", METRICS_PATH)
            if denied is not None:
                log.info("metrics scrape refused: %s", denied.status, extra={"action": "metrics-refused"})
                return denied.status, (denied.message + "\n").encode(), text
        return 200, generate_latest(self.registry), CONTENT_TYPE_LATEST
