"""A local stand-in for the functions' HTTP entry points that verifies every relay signature.

Role: `RelayReceiver` (a threaded HTTP server on 127.0.0.1, port 0) records each POST it
accepts as a `Received` (the CloudEvent, its path, when it arrived) after checking the
authentication the relay was configured with: `hmac` via `gpupool.core.intake.signature`,
`sigv4` by recomputing botocore's own SigV4 signature with the expected credentials, service and
region, or `fc` as Function Compute 3.0's gateway checks an HTTP trigger with `authType:
function` (`fc_problem`: the ACS3-HMAC-SHA256 signature recomputed by the Alibaba Cloud SDK's
own `get_authorization` — alibabacloud_tea_openapi, independent of `gpupool.core.intake.acs3`,
which the relay signs with — from the request as received, the way FC's published client
examples build it, with the expected AccessKey), and then the signed `x-acs-content-sha256`
against the body, as the function behind it does (a tampered request, path, date or body,
another key or STS token is refused with 403). A scripted
`answer` callable may return another status (503 while a function is "down", 400 for an event it
rejects); refused and scripted answers are counted too. Tests and benchmarks/reaction.py use it.

Must not: listen beyond 127.0.0.1 or act on the events.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from gpupool.core.intake import acs3
from gpupool.core.intake.envelope import HttpRequest
from gpupool.core.intake.signature import signature_problem

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


def fc_problem(
    *, url: str, headers: dict[str, str], body: bytes, keys: tuple[str, ...], now: float | None = None
) -> str | None:
    """Why FC's gateway would refuse this request signed with `keys` (AccessKey id, secret, and
    the STS token when there is one), or the function its body; None when both accept it.

    The gateway's rules, as FC 3.0 and the V3 signature mechanism document them: an
    `ACS3-HMAC-SHA256` Authorization naming the expected AccessKey id; a signed `x-acs-date`
    within 15 minutes; for STS keys, the signed `x-acs-security-token`; the signature recomputed
    over the headers its SignedHeaders names, the path (`$` as `%24`, as FC's examples send it),
    the query, and `x-acs-content-sha256` as the hashed payload. Simpler than the real gateway:
    it knows one AccessKey (no RAM lookup, no `fc:InvokeFunction` check).
    """
    from types import SimpleNamespace
    from urllib.parse import parse_qsl, urlsplit

    from alibabacloud_tea_openapi.utils import Utils

    key_id, secret = keys[0], keys[1]
    token = keys[2] if len(keys) > 2 else ""
    lowered = {k.lower(): v for k, v in headers.items()}
    given = acs3.parse_authorization(lowered.get("authorization", ""))
    if given is None:
        return "an ACS3-HMAC-SHA256 authorization (Credential, SignedHeaders, Signature) is required"
    if given.credential != key_id:
        return "signed with another AccessKey"
    missing = [h for h in given.signed_headers if h not in lowered]
    if missing or acs3.DATE_HEADER not in given.signed_headers:
        return f"x-acs-date must be signed and every signed header sent (missing: {', '.join(missing)})"
    stamp = acs3.parse_acs_date(lowered[acs3.DATE_HEADER])
    if stamp is None:
        return "x-acs-date is not yyyy-MM-ddTHH:mm:ssZ"
    if abs((time.time() if now is None else now) - stamp) > acs3.TOLERANCE_SECONDS:
        return "x-acs-date is more than 15 minutes off"
    if token and (
        acs3.SECURITY_TOKEN_HEADER not in given.signed_headers or lowered[acs3.SECURITY_TOKEN_HEADER] != token
    ):
        return "the STS security token is not the one issued with this AccessKey"
    parts = urlsplit(url)
    request = SimpleNamespace(
        method="POST",
        pathname=parts.path.replace("$", "%24") or "/",
        query=dict(parse_qsl(parts.query, keep_blank_values=True)),
        headers={h: lowered[h] for h in given.signed_headers},
    )
    payload = lowered.get(acs3.CONTENT_SHA256_HEADER, "")
    expected = Utils.get_authorization(request, acs3.ALGORITHM, payload, key_id, secret)
    if not hmac.compare_digest(lowered["authorization"].strip(), expected):
        return "ACS3 signature does not match"
    return acs3.payload_problem(HttpRequest(method="POST", headers=lowered, body=body))


@dataclass
class RelayReceiver:
    auth: str = "none"
    hmac_secret: bytes = b""
    credentials: Any = None
    region: str = ""
    fc_keys: tuple[str, ...] = ("", "")  # (AccessKey id, secret[, STS token]) for auth="fc"
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
