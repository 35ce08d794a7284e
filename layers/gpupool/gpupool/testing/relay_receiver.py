"""A local stand-in for the functions' HTTP entry points that verifies every relay signature.

Role: `RelayReceiver` (a threaded HTTP server on 127.0.0.1, port 0) records each POST it
accepts as a `Received` (the CloudEvent, its path, when it arrived) after checking the
authentication the relay was configured with: `hmac` via `gpupool.core.intake.signature`,
`sigv4` by recomputing botocore's own SigV4 signature with the expected credentials, service and
region, or `fc` by recomputing the FC signature with the `fc2` SDK's signer and the expected
AccessKey, as the FC gateway does, and then checking the signed `content-md5` against the body,
as the function behind it does (a tampered request or body, another region or another key is
refused with 403). A scripted
`answer` callable may return another status (503 while a function is "down", 400 for an event it
rejects); refused and scripted answers are counted too. Tests and benchmarks/reaction.py use it.

Must not: listen beyond 127.0.0.1 or act on the events.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from gpupool.core.intake.envelope import HttpRequest
from gpupool.core.intake.signature import body_digest_problem, signature_problem

__all__ = ["Received", "RelayReceiver", "fc_problem", "sigv4_problem"]

Answer = Callable[[dict[str, Any]], int]


@dataclass(frozen=True, slots=True)
class Received:
    path: str
    event: dict[str, Any]
    at: float  # time.monotonic()


def sigv4_problem(
    *,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    credentials: Any,
    region: str,
    service: str,
) -> str | None:
    """Why this request is not what botocore's SigV4 signer would produce, or None when it is."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    lowered = {k.lower(): v for k, v in headers.items()}
    authorization = lowered.get("authorization", "")
    if not authorization.startswith("AWS4-HMAC-SHA256 "):
        return "not a SigV4 request"
    fields = dict(
        part.strip().split("=", 1)
        for part in authorization[len("AWS4-HMAC-SHA256 ") :].split(",")
        if "=" in part
    )
    signed = fields.get("SignedHeaders", "").split(";")
    stamp = lowered.get("x-amz-date", "")
    if not stamp or "host" not in signed:
        return "x-amz-date and a signed host header are required"
    request = AWSRequest(method=method, url=url, data=body, headers={h: lowered.get(h, "") for h in signed})
    request.context["timestamp"] = stamp
    signer = SigV4Auth(credentials, service, region)
    expected_scope = f"{credentials.access_key}/{signer.credential_scope(request)}"
    if fields.get("Credential") != expected_scope:
        return f"credential scope {fields.get('Credential')!r} is not {expected_scope!r}"
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    return None if fields.get("Signature") == expected else "signature does not match"


def fc_problem(*, url: str, headers: dict[str, str], body: bytes, keys: tuple[str, str]) -> str | None:
    """Why this request is not signed as Function Compute expects from `keys`, or its body is not
    the one the signed `content-md5` names; None when both hold."""
    from email.utils import parsedate_to_datetime
    from urllib.parse import urlsplit

    from fc2.auth import Auth

    lowered = {k.lower(): v for k, v in headers.items()}
    given, date = lowered.get("authorization", ""), lowered.get("date", "")
    if not given.startswith("FC ") or not date:
        return "an FC signature (authorization: FC ak:signature) and a date header are required"
    try:
        skew = abs(time.time() - parsedate_to_datetime(date).timestamp())
    except (TypeError, ValueError):
        return "the date header is not an HTTP date"
    if skew > 900:
        return "the date header is more than 15 minutes off"
    token = lowered.get("x-fc-security-token", "")
    expected = Auth(keys[0], keys[1], token).sign_request("POST", urlsplit(url).path or "/", lowered)
    if given != expected:
        return "FC signature does not match"
    return body_digest_problem(HttpRequest(method="POST", headers=lowered, body=body))


@dataclass
class RelayReceiver:
    auth: str = "none"
    hmac_secret: bytes = b""
    credentials: Any = None
    region: str = ""
    fc_keys: tuple[str, str] = ("", "")  # (AccessKey id, secret) for auth="fc"
    answer: Answer | None = None
    retry_after: str | None = None  # sent with every non-2xx scripted answer
    received: list[Received] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    answered: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # ---- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> Self:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = (
                    f"http://{self.headers.get('host')}{self.path}"
                    if self.headers.get("host")
                    else (receiver.url(self.path))
                )
                status = receiver.handle(self.path, url, dict(self.headers.items()), body)
                self.send_response(status)
                if status >= 300 and receiver.retry_after is not None:
                    self.send_header("retry-after", receiver.retry_after)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def url(self, path: str = "/") -> str:
        assert self._server is not None, "the receiver is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    # ---- requests ------------------------------------------------------------------------------
    def problem(self, url: str, headers: dict[str, str], body: bytes) -> str | None:
        if self.auth == "hmac":
            return signature_problem(self.hmac_secret, headers, body, now=time.time())
        if self.auth == "fc":
            return fc_problem(url=url, headers=headers, body=body, keys=self.fc_keys)
        if self.auth == "sigv4":
            return sigv4_problem(
                method="POST",
                url=url,
                headers=headers,
                body=body,
                credentials=self.credentials,
                region=self.region,
                service="lambda",
            )
        return None

    def handle(self, path: str, url: str, headers: dict[str, str], body: bytes) -> int:
        problem = self.problem(url, headers, body)
        with self._lock:
            if problem is not None:
                self.refused.append(problem)
                return 403
            try:
                event = json.loads(body)
            except ValueError:
                self.refused.append("body is not JSON")
                return 400
            status = self.answer(event) if self.answer is not None else 200
            self.answered[status] = self.answered.get(status, 0) + 1
            if status < 300:
                self.received.append(Received(path, event, time.monotonic()))
            return status

    def events(self, path: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [r.event for r in self.received if path is None or r.path == path]
