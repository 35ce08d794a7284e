"""The relay's own HMAC signature on its webhook calls, and how the functions check it.

Role: the one definition shared by the relay (which signs, ``--forward-auth hmac``) and every
function's HTTP entry point (Lambda Function URL, FC HTTP trigger), over the request's body
bytes as intake decoded them (``envelope.HttpRequest.body``, the same decode the parser reads):
``x-gpupool-timestamp``: Unix seconds (decimal) when the request was signed;
``x-gpupool-signature``: ``v1=<hex>``, HMAC-SHA256 with the shared secret over
``b"<timestamp>." + body`` (the exact bytes sent): exactly 64 lowercase hex digits, compared in
constant time — a prefix, an empty digest or any other length is refused. Several ``v1=``
values may be given, comma-separated, so a secret can be rotated: any one matching is enough.
A timestamp more than ``TOLERANCE_SECONDS`` from ``now`` (either way) is refused, so a captured
request cannot be replayed later (within the window, the functions' delivery ledger refuses it).
Function Compute's own signature (``--forward-auth fc``) is ``acs3``.

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
_HEX_DIGITS = frozenset("0123456789abcdef")
_DIGEST_LENGTH = 64  # hex digits of a SHA-256


def _digest(secret: bytes, timestamp: str, body: bytes) -> str:
    return hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


def sign_body(secret: bytes, body: bytes, *, timestamp: int) -> dict[str, str]:
    """The two headers that sign ``body`` at ``timestamp`` (Unix seconds)."""
    if not secret:
        raise ValueError("the HMAC secret is empty")
    stamp = str(int(timestamp))
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: _SCHEME + _digest(secret, stamp, body)}


def _lowered(headers: Mapping[str, str]) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in headers.items()}


def _is_digest(text: str) -> bool:
    return len(text) == _DIGEST_LENGTH and set(text) <= _HEX_DIGITS


def signature_problem(secret: bytes, headers: Mapping[str, str], body: bytes, *, now: float) -> str | None:
    """Why the request is not validly signed with ``secret``, or None when it is.

    Header names are matched case-insensitively. Never raises on bad input.
    """
    if not secret:
        return "no HMAC secret to check the signature with"
    lowered = _lowered(headers)
    stamp = lowered.get(TIMESTAMP_HEADER, "").strip()
    given = lowered.get(SIGNATURE_HEADER, "").strip()
    if not stamp or not given:
        return f"unsigned request: {TIMESTAMP_HEADER} and {SIGNATURE_HEADER} are required"
    if not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
        return f"{TIMESTAMP_HEADER} is not Unix seconds"
    if abs(now - int(stamp)) > TOLERANCE_SECONDS:
        return f"{TIMESTAMP_HEADER} is more than {TOLERANCE_SECONDS} s from now"
    expected = _digest(secret, stamp, body)
    digests = [part.strip()[len(_SCHEME) :] for part in given.split(",") if part.strip().startswith(_SCHEME)]
    # Every well-formed candidate is compared (in constant time, whole digest against whole digest).
    matched = [hmac.compare_digest(digest, expected) for digest in digests if _is_digest(digest)]
    if any(matched):
        return None
    if not matched:
        return f"signature does not match: {SIGNATURE_HEADER} has no v1=<64 hex digits> value"
    return "signature does not match the body"


def request_signature_problem(secret: bytes, request: HttpRequest, *, now: float) -> str | None:
    """Why an HTTP request is not validly signed with ``secret``, or None when it is."""
    if request.body is None:
        return "the body cannot be read as the bytes that were signed"
    return signature_problem(secret, request.headers, request.body, now=now)
