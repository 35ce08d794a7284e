"""The one table that turns Kubernetes API failures into gpupool's domain errors.

Role: map an `ApiException` (HTTP status, and the Status object's `reason` for 409) and the
transport errors underneath the official client to NotFound / AlreadyExists / Conflict /
Throttled / PermanentError, keeping the API server's message.

Must not: retry, log, or hide a failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gpupool.service.errors import (
    AlreadyExists,
    Conflict,
    DomainError,
    NotFound,
    PermanentError,
    Throttled,
)

__all__ = ["STATUS_TABLE", "translate_api_error", "translate_transport_error", "translated"]

# HTTP status → domain error, for the statuses with a fixed meaning (409 is decided by reason).
STATUS_TABLE: dict[int, type[DomainError]] = {
    400: PermanentError,  # malformed request or object
    401: PermanentError,  # no or bad credentials
    403: PermanentError,  # RBAC forbids it
    404: NotFound,
    405: PermanentError,
    410: Conflict,  # resourceVersion too old: re-read
    415: PermanentError,
    422: PermanentError,  # invalid object
    429: Throttled,  # rate limited, or an eviction a PodDisruptionBudget blocks now
}


def _status_body(error: Any) -> dict[str, Any]:
    body = getattr(error, "body", None)
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def translate_api_error(error: Any, *, action: str) -> DomainError:
    """The domain error for an `ApiException` raised while doing `action` (e.g. "patch GPUPool a")."""
    status = int(getattr(error, "status", 0) or 0)
    body = _status_body(error)
    reason = str(body.get("reason") or getattr(error, "reason", "") or "")
    message = str(body.get("message") or reason or "no message")
    text = f"Kubernetes {action} failed ({status} {reason}): {message}"
    code = reason or str(status)
    if status == 409:
        return AlreadyExists(text, code=code) if reason == "AlreadyExists" else Conflict(text, code=code)
    kind = STATUS_TABLE.get(status)
    if kind is not None:
        return kind(text, code=code)
    if status >= 500 or status == 0:
        return Throttled(text, code=code)
    return PermanentError(text, code=code)


def translate_transport_error(error: BaseException, *, action: str) -> DomainError:
    """Connection refused, timeouts, broken responses: the API server may be back soon."""
    return Throttled(f"Kubernetes {action} failed: cannot reach the API server: {error}", code="Transport")


@contextmanager
def translated(action: str) -> Iterator[None]:
    """Turn client and transport failures inside the block into domain errors."""
    try:
        yield
    except ApiException as error:
        raise translate_api_error(error, action=action) from error
    except (HTTPError, OSError) as error:
        raise translate_transport_error(error, action=action) from error


def read_body(response: Any) -> bytes:
    """The body of a `_preload_content=False` response, read to the end so its connection goes
    back to the pool (an unread body keeps the connection busy and leaks it)."""
    try:
        data: bytes = response.data
    finally:
        response.release_conn()
    return data
