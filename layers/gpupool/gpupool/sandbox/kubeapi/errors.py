"""API errors of the embedded Kubernetes API server, rendered as `meta/v1 Status` bodies.

Every failure the server reports is an `ApiError`: the HTTP code, the machine-readable
reason (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...) and the `details` the real
kube-apiserver sends, so the official client raises `ApiException` with the same fields.

Must not: know about HTTP sockets or storage; it only describes failures.
"""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


class ApiError(Exception):
    """A request the server refuses; `status_body()` is what goes on the wire."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: JsonObject | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status_body(self) -> JsonObject:
        """The Status, its keys in the order kube-apiserver writes them (the Go struct's field
        order: kind, apiVersion, metadata, status, message, reason, details, code) — clients
        that print the body, such as the Python client's `FailToCreateError`, show it as is."""
        body: JsonObject = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            order = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")
            body["details"] = {
                **{k: self.details[k] for k in order if k in self.details},
                **{k: v for k, v in self.details.items() if k not in order},
            }
        body["code"] = self.code
        return body


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """`text` as Go's `%q` (strconv.Quote) prints it, as field errors show a bad value."""
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


def _details(name: str, group: str, plural: str) -> JsonObject:
    details: JsonObject = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = plural
    return details


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(group, plural)} "{name}" not found',
        details=_details(name, group, plural),
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(group, plural)} "{name}" already exists',
        details=_details(name, group, plural),
    )


def conflict(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        details=_details(name, group, plural),
    )


_CAUSE_REASONS = (
    ("Required value", "FieldValueRequired"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too many", "FieldValueTooMany"),
    ("Too long", "FieldValueTooLong"),
)


class TypeInvalid(str):
    """A cause message of field.TypeInvalid: it prints "Invalid value" like field.Invalid, but its
    cause reason is `FieldValueTypeInvalid` (and it stops CEL, see `schema`)."""

    __slots__ = ()


def _cause_reason(message: str) -> str:
    """Upstream's cause reason, from the message prefix field.Error gives each error type."""
    if isinstance(message, TypeInvalid):
        return "FieldValueTypeInvalid"
    return next(
        (reason for prefix, reason in _CAUSE_REASONS if message.startswith(prefix)), "FieldValueInvalid"
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid: `causes` are (field path, message) pairs, as the real server lists them; the
    message names each distinct one, in brackets when there are several (upstream's aggregate)."""
    lines = list(dict.fromkeys(f"{field}: {message}" for field, message in causes))
    summary = lines[0] if len(lines) == 1 else "[" + ", ".join(lines) + "]"
    if not lines:
        summary = ""
    details: JsonObject = {
        **({"name": name} if name else {}),  # upstream's omitempty: ListOptions are nameless
        "kind": kind,
        "causes": [{"reason": _cause_reason(m), "message": m, "field": f} for f, m in causes],
    }
    if group:
        details["group"] = group
    qualified = f"{kind}.{group}" if group else kind
    message = f'{qualified} "{name}" is invalid' + (f": {summary}" if summary else "")
    return ApiError(422, "Invalid", message, details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


# The patch types upstream's handlers accept, in the order its error lists them.
CUSTOM_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
BUILTIN_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


def unsupported_media_type(accepted: tuple[str, ...]) -> ApiError:
    """415 for a PATCH whose Content-Type the resource does not take, in upstream's words."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_many_requests(message: str) -> ApiError:
    return ApiError(429, "TooManyRequests", message)
