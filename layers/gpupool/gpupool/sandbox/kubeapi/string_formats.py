"""The OpenAPI string formats the API server checks in custom resources: `date-time` and `date`.

Role: `format_problem(schema, value, path)` is the cause the real server gives a string that
breaks its schema's `format`, or None. The API server keeps a format only where it supports it
(apiextensions-apiserver `pkg/apiserver/validation/formats.go`; names compared without `-`) and
checks it with kube-openapi's `strfmt` registry, which reads the two date formats as follows
(`pkg/validation/strfmt/date.go`, `time.go`), quirks included:
- `date`: Go's `time.Parse("2006-01-02", s)` — four-digit year, two-digit month and day, a day
  that exists in that month; nothing before or after.
- `date-time`: at least 4 characters; lower-cased and split at every `t`; the first part a
  `date`, the second `HH:MM:SS`, an optional fraction (any one character, then digits) and `z`
  or `±hh:mm` (offset digits unchecked), with hour ≤ 23, minute ≤ 59, second ≤ 59. Parts after a
  second `t` are not looked at, as upstream.
A failure is a TypeInvalid error (`Invalid value: "<s>": <path> in body must be of type
date-time: "<s>"`), which also stops the CEL rules (`schema`).

Not checked (the server checks them; no schema the sandbox serves uses them): the other
supported formats (uri, email, hostname, ipv4, ipv6, cidr, mac, uuid*, isbn*, creditcard, ssn,
hexcolor, rgbcolor, byte, password, duration, k8s-short-name, k8s-long-name).

Must not: know where a schema sits or report anything but this one cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpupool.core.goregexp import go_regexp
from gpupool.sandbox.kubeapi.errors import go_quote

__all__ = ["format_problem", "is_date", "is_date_time"]

_DATE: Final = go_regexp(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_TIME: Final = go_regexp(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def is_date(text: str) -> bool:
    """kube-openapi's `IsDate`: Go's time.Parse with the RFC 3339 full-date layout."""
    found = _DATE.match(text)
    if found is None:
        return False
    year, month, day = (int(part) for part in found.groups())
    if not 1 <= month <= 12:
        return False
    days = 29 if month == 2 and _leap(year) else _DAYS[month - 1]
    return 1 <= day <= days


def is_date_time(text: str) -> bool:
    """kube-openapi's `IsDateTime` (see the module docstring for its reading of RFC 3339)."""
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    found = _TIME.search(parts[1])
    if found is None:
        return False
    return found.group(1) <= "23" and found.group(2) <= "59" and found.group(3) <= "59"


_CHECKS: Final = {"datetime": is_date_time, "date": is_date}


def format_problem(schema: Mapping[str, Any], value: str, path: str) -> str | None:
    """The cause message for a string `value` that breaks `schema`'s format, or None."""
    name = str(schema.get("format") or "").replace("-", "")
    check = _CHECKS.get(name)
    if check is None or check(value):
        return None
    quoted = go_quote(value)
    return f"Invalid value: {quoted}: {path} in body must be of type {schema['format']}: {quoted}"
