"""What one invocation's event is: its cause, the kind of trigger that sent it, its HTTP request.

Role: the records every cloud's intake (``aws``, ``alibaba``) hands its handler, so the handler
decides nothing about the event itself:
- ``Intake``: the cause, the ``Trigger`` kind (EventBridge event, schedule, FC timer, HTTP
  request, or an event of no kind intake knows) and, for an HTTP request only, the request;
- ``HttpRequest``: method, headers and the body decoded **once** (base64 undone when
  ``isBase64Encoded`` is true): ``body`` is the exact bytes an HMAC signature covers and ``text``
  is what the relay parser reads, both from that one decode; ``caller``, the identity the
  platform itself authenticated, as the platform wrote it into the request context (a Lambda
  Function URL with AuthType AWS_IAM: ``requestContext.authorizer.iam.userArn``). Lambda Function
  URL requests (payload format 2.0) and FC 3.0 HTTP-trigger events carry the same fields gpupool
  reads (``body``, ``isBase64Encoded``, ``headers``, ``requestContext.http.method``), so
  ``read_http_request`` serves both;
- ``as_json_object``: the small, total JSON helper every envelope parser uses.

Must not: know which cloud sent the event, decide anything, raise on bad input, read the
clock, or log.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from gpupool.core.intake.causes import Cause

__all__ = ["HttpRequest", "Intake", "Trigger", "as_json_object", "read_http_request"]

# "unknown": not JSON, or no trigger shape this cloud's intake reads.
Trigger = Literal["http", "eventbridge", "schedule", "timer", "unknown"]


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """An HTTP request as the platform delivered it, its body decoded once."""

    method: str | None
    headers: Mapping[str, str]
    # The exact bytes the caller sent (what a signature covers); None: not readable as bytes
    # (a body that is neither text nor bytes, text that is not UTF-8-encodable, bad base64).
    body: bytes | None
    # The caller the platform authenticated (an IAM ARN); None when the platform names none.
    caller: str | None = None

    @property
    def text(self) -> str | None:
        """The body as UTF-8 text (what the relay parser reads); None when it is not UTF-8."""
        if self.body is None:
            return None
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError:
            return None


@dataclass(frozen=True, slots=True)
class Intake:
    """What intake made of one event: its cause, its trigger kind, and its request when it is HTTP."""

    cause: Cause
    trigger: Trigger
    request: HttpRequest | None = None

    def __post_init__(self) -> None:
        if (self.trigger == "http") != (self.request is not None):
            raise ValueError("an Intake carries a request exactly when its trigger is http")


def _body_bytes(body: object, *, is_base64: object) -> bytes | None:
    if body is None:
        raw = b""
    elif isinstance(body, bytes | bytearray):
        raw = bytes(body)
    elif isinstance(body, str):
        try:
            raw = body.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: not text anyone sent over HTTP
            return None
    else:
        return None
    if is_base64 is True:
        try:
            return base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return None
    return raw


def read_http_request(envelope: Mapping[str, object]) -> HttpRequest:
    """The request a Function URL / FC HTTP-trigger envelope carries; never raises."""
    context = envelope.get("requestContext")
    http = context.get("http") if isinstance(context, Mapping) else None
    method = http.get("method") if isinstance(http, Mapping) else None
    raw_headers = envelope.get("headers")
    headers = (
        {str(name): value for name, value in raw_headers.items() if isinstance(value, str)}
        if isinstance(raw_headers, Mapping)
        else {}
    )
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    iam = authorizer.get("iam") if isinstance(authorizer, Mapping) else None
    caller = iam.get("userArn") if isinstance(iam, Mapping) else None
    return HttpRequest(
        method=method if isinstance(method, str) else None,
        headers=headers,
        body=_body_bytes(envelope.get("body"), is_base64=envelope.get("isBase64Encoded", False)),
        caller=caller if isinstance(caller, str) and caller else None,
    )


def as_json_object(value: object) -> Mapping[str, object] | None:
    """A JSON object given as a mapping or as JSON text / UTF-8 bytes; None for anything else."""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping) and all(isinstance(key, str) for key in value):
        return value
    return None
