"""The JSONPath subset CRD printer columns are written in, read as client-go's `jsonpath` reads it.

Role: `find(obj, path)` is every value `path` (a column's `jsonPath`, e.g.
`.metadata.labels.node\\.kubernetes\\.io/instance-type` or
`.status.conditions[?(@.type=="Ready")].status`) selects in `obj`, in order; missing keys select
nothing (upstream's `AllowMissingKeys`). Supported: `.field` (a `\\.` inside a field name is a
literal dot), `[N]`, `[*]`, `[?(@.field=="text")]` and `!=` (a filter over a list's items,
comparing a field of each with a quoted string). A path outside this subset selects nothing.

Must not: evaluate anything but a path over a decoded JSON value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

__all__ = ["find"]

_STEP: Final = re.compile(
    r"""\[\?\(@\.(?P<field>[A-Za-z0-9_\-]+)\s*(?P<op>==|!=)\s*(?P<q>["'])(?P<text>.*?)(?P=q)\)\]"""
    r"|\[(?P<index>-?[0-9]+|\*)\]"
    r"|\.(?P<name>(?:\\\.|[^.\[\\])+)"
)


def _steps(path: str) -> list[re.Match[str]] | None:
    steps, at = [], 0
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    while at < len(text):
        found = _STEP.match(text, at)
        if found is None:
            return None
        steps.append(found)
        at = found.end()
    return steps


def _apply(step: re.Match[str], value: Any) -> Iterator[Any]:
    if step.group("name") is not None:
        key = step.group("name").replace("\\.", ".")
        if isinstance(value, dict) and key in value:
            yield value[key]
    elif step.group("index") is not None:
        if not isinstance(value, list):
            return
        if step.group("index") == "*":
            yield from value
            return
        index = int(step.group("index"))
        if -len(value) <= index < len(value):
            yield value[index]
    elif isinstance(value, list):
        wanted, equal = step.group("text"), step.group("op") == "=="
        field = step.group("field")
        for item in value:
            if isinstance(item, dict) and field in item and (str(item[field]) == wanted) is equal:
                yield item


def find(obj: Any, path: str) -> list[Any]:
    """The values `path` selects in `obj` (empty when none, or when `path` is not understood)."""
    steps = _steps(path)
    if steps is None:
        return []
    values = [obj]
    for step in steps:
        values = [found for value in values for found in _apply(step, value)]
    return values
