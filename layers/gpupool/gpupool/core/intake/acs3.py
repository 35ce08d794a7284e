"""Alibaba Cloud's V3 request signature, ACS3-HMAC-SHA256, which FC 3.0 checks on a signed HTTP trigger.

Role: the one definition the relay signs with (``--forward-auth fc``) and a function behind an
FC HTTP trigger with ``authType: function`` reads. FC 3.0 ("Configure signature authentication
for HTTP triggers") says signed HTTP triggers follow the Alibaba Cloud SDK signature mechanism,
and its gateway checks the signature before the function runs. The mechanism, as the Alibaba
Cloud SDK's "Request syntax and signature method V3" publishes it, rule by rule:

- ``CanonicalRequest = METHOD \\n CanonicalURI \\n CanonicalQueryString \\n CanonicalHeaders \\n
  SignedHeaders \\n HashedRequestPayload``;
- CanonicalURI: the path, each ``/``-separated segment percent-encoded per RFC 3986 (letters,
  digits and ``-_.~`` kept; space ``%20``, ``*`` ``%2A``); ``/`` for an empty path;
- CanonicalQueryString: parameters sorted by name, name and value encoded the same way, joined
  ``name=value`` with ``&``; a parameter without a value is ``name=``; empty when there is none;
- CanonicalHeaders: each signed header ``lowercase-name:trimmed-value\\n``, sorted by name;
  the signed headers are ``host``, ``content-type`` and every ``x-acs-*`` header sent
  (``x-acs-date``, ISO 8601 UTC ``yyyy-MM-ddTHH:mm:ssZ``, valid for 15 minutes;
  ``x-acs-signature-nonce``; ``x-acs-content-sha256``; ``x-acs-security-token`` for STS);
  SignedHeaders: their names joined with ``;``;
- HashedRequestPayload: lowercase hex SHA-256 of the body, the value of ``x-acs-content-sha256``;
- ``StringToSign = "ACS3-HMAC-SHA256\\n" + hex(SHA-256(CanonicalRequest))``; the signature is
  lowercase hex HMAC-SHA256 with the AccessKey secret, sent as ``Authorization:
  ACS3-HMAC-SHA256 Credential=<AccessKey id>,SignedHeaders=<names>,Signature=<hex>``.

Why the function still checks the body (``payload_problem``): FC's own examples sign an empty
HashedRequestPayload and send no ``x-acs-content-sha256`` header while posting a body, so FC's
gateway evidently takes the payload hash from that header, not from the bytes it received. The
relay sends and signs the header; the function compares it with the body it got, so a body
swapped under a captured signature is refused.

Must not: read the clock or make a nonce (both are passed in), read a key from anywhere, or log.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote, unquote

from gpupool.core.intake.envelope import HttpRequest

__all__ = [
    "ALGORITHM",
    "CONTENT_SHA256_HEADER",
    "DATE_HEADER",
    "NONCE_HEADER",
    "SECURITY_TOKEN_HEADER",
    "TOLERANCE_SECONDS",
    "Authorization",
    "acs_date",
    "authorization",
    "canonical_request",
    "content_sha256",
    "parse_acs_date",
    "parse_authorization",
    "payload_problem",
    "signed_header_names",
]

ALGORITHM = "ACS3-HMAC-SHA256"
CONTENT_SHA256_HEADER = "x-acs-content-sha256"
DATE_HEADER = "x-acs-date"
NONCE_HEADER = "x-acs-signature-nonce"
SECURITY_TOKEN_HEADER = "x-acs-security-token"
TOLERANCE_SECONDS = 900  # x-acs-date: "within 15 minutes" of the request
_DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _encode(text: str) -> str:
    """RFC 3986 percent-encoding, UTF-8: only letters, digits and ``-_.~`` stay as they are."""
    return quote(text, safe="", encoding="utf-8")


def content_sha256(body: bytes) -> str:
    """``x-acs-content-sha256`` (HashedRequestPayload) of ``body``: lowercase hex SHA-256."""
    return hashlib.sha256(body).hexdigest()


def acs_date(unix_seconds: float) -> str:
    """``x-acs-date`` for a moment: ISO 8601 UTC to the second, ``2023-10-26T10:22:32Z``."""
    return datetime.fromtimestamp(int(unix_seconds), tz=UTC).strftime(_DATE_FORMAT)


def parse_acs_date(text: str) -> float | None:
    """Unix seconds of an ``x-acs-date`` value, or None when it is not ``yyyy-MM-ddTHH:mm:ssZ``."""
    if not _DATE.match(text.strip()):
        return None
    try:
        return datetime.strptime(text.strip(), _DATE_FORMAT).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _canonical_uri(path: str) -> str:
    if not path:
        return "/"
    return "/".join(_encode(unquote(segment)) for segment in path.split("/"))


def _canonical_query(query: str) -> str:
    pairs = sorted(parse_qsl(query, keep_blank_values=True))
    return "&".join(f"{_encode(name)}={_encode(value)}" for name, value in pairs)


def _lowered(headers: Mapping[str, str]) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in headers.items()}


def signed_header_names(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The headers the mechanism signs among ``headers``: host, content-type, every x-acs-*; sorted."""
    names = {
        name for name in _lowered(headers) if name in ("host", "content-type") or name.startswith("x-acs-")
    }
    return tuple(sorted(names))


def canonical_request(
    *, method: str, path: str, query: str, headers: Mapping[str, str], signed: tuple[str, ...]
) -> str:
    """The CanonicalRequest over the ``signed`` header names (lowercase), as ``headers`` carry them."""
    lowered = _lowered(headers)
    names = sorted(signed)
    canonical_headers = "".join(f"{name}:{lowered.get(name, '').strip()}\n" for name in names)
    return "\n".join(
        (
            method.upper(),
            _canonical_uri(path),
            _canonical_query(query),
            canonical_headers,
            ";".join(names),
            lowered.get(CONTENT_SHA256_HEADER, "").strip(),
        )
    )


def _signature(secret: str, request: str) -> str:
    string_to_sign = f"{ALGORITHM}\n{hashlib.sha256(request.encode('utf-8')).hexdigest()}"
    return hmac.new(secret.encode("utf-8"), string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def authorization(
    *, method: str, path: str, query: str, headers: Mapping[str, str], key_id: str, secret: str
) -> str:
    """The ``Authorization`` value that signs this request: every header ``signed_header_names``
    picks is signed, so set them all (host, content-type, x-acs-date, x-acs-content-sha256 …) first."""
    if not key_id or not secret:
        raise ValueError("an ACS3 signature needs an AccessKey id and secret")
    signed = signed_header_names(headers)
    request = canonical_request(method=method, path=path, query=query, headers=headers, signed=signed)
    signature = _signature(secret, request)
    return f"{ALGORITHM} Credential={key_id},SignedHeaders={';'.join(signed)},Signature={signature}"


@dataclass(frozen=True, slots=True)
class Authorization:
    """An ``Authorization: ACS3-HMAC-SHA256 …`` header, read (not verified)."""

    credential: str
    signed_headers: tuple[str, ...]
    signature: str


def parse_authorization(value: str) -> Authorization | None:
    """The fields of an ACS3-HMAC-SHA256 ``Authorization`` value, or None when it is not one."""
    scheme, _, rest = value.strip().partition(" ")
    if scheme != ALGORITHM:
        return None
    fields = dict(part.strip().partition("=")[::2] for part in rest.split(",") if "=" in part)
    credential, names, signature = (fields.get(k, "") for k in ("Credential", "SignedHeaders", "Signature"))
    if not credential or not names or not _HEX64.match(signature):
        return None
    return Authorization(credential, tuple(names.split(";")), signature)


def payload_problem(request: HttpRequest) -> str | None:
    """Why the request's body is not the one its signed ``x-acs-content-sha256`` names, or None."""
    if request.body is None:
        return "the body cannot be read as the bytes that were signed"
    given = _lowered(request.headers).get(CONTENT_SHA256_HEADER, "").strip()
    if not given:
        return f"{CONTENT_SHA256_HEADER} is required: the FC signature covers the body only through it"
    if not hmac.compare_digest(
        given.encode("ascii", "replace"), content_sha256(request.body).encode("ascii")
    ):
        return f"{CONTENT_SHA256_HEADER} does not match the body"
    return None
