"""Request bodies the relay parses: bounded in bytes while they arrive, and in nesting before they are read.

Role: `read_body(request, limit)` refuses a body whose `Content-Length` is over `limit` without
reading a byte of it, and stops reading a body sent without one (chunked) as soon as it passes
`limit` — never holding more than `limit` plus one chunk (HTTP 413 either way; a malformed
`Content-Length` is a 400). `parse_json(body)` refuses JSON nested deeper than `MAX_DEPTH` before
`json.loads` sees it (the depth is counted over the bytes with the strings blanked, in numpy, so
a 200,000-deep array costs milliseconds and never reaches a recursion limit), and
`parse_manifest(body)` reads YAML (or JSON) with a loader that stops at the same depth and refuses
anchors / aliases (an alias bomb expands a few hundred bytes into gigabytes of nodes). Both raise
`BodyRefused(status, message)`; the routes answer 400 / 413 with it, or the extender protocol's
`Error` field. Both are CPU work: callers run them in the thread pool, never on the event loop.

Must not: decide anything about what the body says, or log a body.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import yaml
from starlette.requests import Request

__all__ = [
    "MAX_BODY",
    "MAX_DEPTH",
    "MAX_MANIFEST",
    "BodyRefused",
    "json_depth",
    "parse_json",
    "parse_manifest",
    "read_body",
]

MAX_BODY = 8 << 20
"""The largest extender or webhook body (an AdmissionReview of a Pod is a few KiB; ExtenderArgs with
nodeCacheCapable names nodes, not full Node objects)."""
MAX_MANIFEST = 1 << 20
"""The largest manifest /api/simulate-schedule reads (YAML is parsed in pure Python: ~1 s per MiB)."""
MAX_DEPTH = 100
"""Nesting a body may have: a Pod's deepest path (managedFields' fieldsV1, affinity terms) is under
20 levels inside an AdmissionReview; 100 leaves room and stays far from Python's recursion limit."""

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


class BodyRefused(ValueError):
    """A body the relay will not read: `status` is 400 (malformed) or 413 (too large)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The body, read only while it stays within `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise BodyRefused(400, f"Content-Length {declared!r} is not a number of bytes")
        if int(declared) > limit:
            raise BodyRefused(413, f"body of {int(declared)} bytes is larger than the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyRefused(413, f"body is larger than the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def json_depth(body: bytes) -> int:
    """How deeply arrays and objects nest in `body` (brackets inside strings do not count)."""
    blanked = _JSON_STRING.sub(b'""', body)
    steps = _STEP[np.frombuffer(blanked, dtype=np.uint8)]
    steps = steps[steps != 0]
    if steps.size == 0:
        return 0
    return int(np.cumsum(steps, dtype=np.int64).max())


def _check_depth(body: bytes, max_depth: int) -> None:
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return  # no more openers than the bound, in strings or not: cannot nest deeper (the common case)
    depth = json_depth(body)
    if depth > max_depth:
        raise BodyRefused(400, f"body nests {depth} levels deep; at most {max_depth} are accepted")


def parse_json(body: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of `body`; BodyRefused(400) when it is not JSON or nests deeper than `max_depth`."""
    _check_depth(body, max_depth)
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BodyRefused(400, f"body is not JSON: {exc}") from None


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and stops composing past `max_depth` levels."""

    max_depth = MAX_DEPTH

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise BodyRefused(400, "YAML anchors and aliases are not accepted")
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise BodyRefused(400, f"body nests deeper than {self.max_depth} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_manifest(body: bytes) -> Any:
    """One YAML (or JSON) document; BodyRefused(400) when it is neither, too deep, or uses aliases."""
    if body.lstrip()[:1] in (b"{", b"["):
        _check_depth(body, MAX_DEPTH)
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            pass  # not JSON after all: YAML's flow style may still read it
    try:
        return yaml.load(body, Loader=_BoundedLoader)  # a SafeLoader: plain data only
    except yaml.YAMLError as exc:
        raise BodyRefused(400, f"body is neither JSON nor YAML: {exc}") from None
    except RecursionError:
        raise BodyRefused(400, f"body nests deeper than {MAX_DEPTH} levels") from None
