"""HMAC-SHA256 signatures on the relay's webhook calls (``--forward-auth hmac``).

Role: the one definition of how a relayed CloudEvent is signed and verified, shared by the
relay (which signs) and every function's HTTP entry point (Lambda Function URL, FC HTTP
trigger), which verify when a shared secret is configured — over the request's body bytes as
intake decoded them (``envelope.HttpRequest.body``, the same decode the parser reads).

Wire format:
- ``x-gpupool-timestamp``: Unix seconds (decimal) when the request was signed;
- ``x-gpupool-signature``: ``v1=<hex>``, HMAC-SHA256 with the shared secret over
  ``b"<timestamp>." + body`` (the exact bytes sent). Several ``v1=`` values may be given,
  comma-separated, so a secret can be rotated: any one matching is enough.
A timestamp more than ``TOLERANCE_SECONDS`` from ``now`` (either way) is refused, so a captured
request cannot be replayed later.

Must not: read the clock (``now`` is passed in), read the secret from anywhere, or log.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from gpupool.core.intake.envelope import HttpRequest

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "TOLERANCE_SECONDS",
    "request_signature_problem",
    "sign_body",
    "signature_problem",
]

SIGNATURE_HEADER = "x-gpupool-signature"
TIMESTAMP_HEADER = "x-gpupool-timestamp"
TOLERANCE_SECONDS = 300
_SCHEME = "v1="


def _digest(secret: bytes, timestamp: str, body: bytes) -> str:
    return hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


def sign_body(secret: bytes, body: bytes, *, timestamp: int) -> dict[str, str]:
    """The two headers that sign ``body`` at ``timestamp`` (Unix seconds)."""
    if not secret:
        raise ValueError("the HMAC secret is empty")
    stamp = str(int(timestamp))
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: _SCHEME + _digest(secret, stamp, body)}


def signature_problem(secret: bytes, headers: Mapping[str, str], body: bytes, *, now: float) -> str | None:
    """Why the request is not validly signed, or None when it is.

    Header names are matched case-insensitively. Never raises on bad input.
    """
    lowered = {str(name).lower(): str(value) for name, value in headers.items()}
    stamp = lowered.get(TIMESTAMP_HEADER, "").strip()
    given = lowered.get(SIGNATURE_HEADER, "").strip()
    if not stamp or not given:
        return f"unsigned request: {TIMESTAMP_HEADER} and {SIGNATURE_HEADER} are required"
    if not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
        return f"{TIMESTAMP_HEADER} is not Unix seconds"
    if abs(now - int(stamp)) > TOLERANCE_SECONDS:
        return f"{TIMESTAMP_HEADER} is more than {TOLERANCE_SECONDS} s from now"
    expected = _digest(secret, stamp, body)
    candidates = [part.strip() for part in given.split(",")]
    if any(
        part.startswith(_SCHEME) and hmac.compare_digest(part[len(_SCHEME) :], expected)
        for part in candidates
    ):
        return None
    return "signature does not match the body"


def request_signature_problem(secret: bytes, request: HttpRequest, *, now: float) -> str | None:
    """Why an HTTP request is not validly signed with ``secret``, or None when it is."""
    if request.body is None:
        return "the body cannot be read as the bytes that were signed"
    return signature_problem(secret, request.headers, request.body, now=now)
