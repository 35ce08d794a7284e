"""Go's `regexp` (RE2 syntax) semantics on Python's `re`: how Kubernetes matches a pattern.

Role: the API server matches a CRD's `pattern`, CEL's `matches()` / `find()` and its own name
and label rules with Go's `regexp`; gpupool's pre-checks and the sandbox must read the same
pattern the same way. `go_regexp(pattern)` compiles `pattern` so that Python answers what Go
answers; `go_match(pattern, text)` is Go's `regexp.MatchString` (a match anywhere in `text`).

Where the two dialects part on the same text, the translation follows Go:
- `$` outside a character class (without the `m` flag) matches only at the end of the text in
  Go; Python's `$` also matches before a trailing newline, so `"720h\\n"` would pass
  `^([0-9]+(s|m|h))+$`. It becomes `\\Z`. Go's `\\z` (Python 3.11 has none) becomes `\\Z` too.
- `\\d`, `\\w`, `\\b` are ASCII in Go (`re.ASCII`); Go's `\\s` is `[\\t\\n\\f\\r ]` (no `\\v`).
- POSIX classes inside brackets (`[[:alpha:]]`), `\\Q…\\E` quoting and `(?<name>…)` groups,
  which Python 3.11 lacks or reads otherwise, are rewritten.
Not translated (none is used by Kubernetes' or Karpenter's patterns): negated POSIX classes
(`[[:^alpha:]]`); a pattern carrying the
`m` flag keeps Python's `$` (the same as Go's multi-line `$`); with `(?i)` Python folds ASCII
only where Go folds Unicode; a flag group in the middle of a pattern, which Go allows and
Python 3.11 refuses, raises `re.error`.

Must not: know any schema, rule or resource; it maps a pattern to a compiled expression.
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = ["go_match", "go_regexp"]

_GO_SPACE: Final = "\\t\\n\\f\\r "
_POSIX: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": _GO_SPACE + "\\v",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_MULTILINE_FLAG = re.compile(r"\(\?[a-zA-Z]*m[a-zA-Z]*[:)]")


def _quoted(pattern: str, start: int) -> tuple[str, int]:
    """`\\Q…\\E` from `start` (just past `\\Q`): the escaped literal and where reading goes on."""
    end = pattern.find("\\E", start)
    literal = pattern[start:] if end < 0 else pattern[start:end]
    return re.escape(literal), len(pattern) if end < 0 else end + 2


def _translate(pattern: str) -> str:
    multiline = _MULTILINE_FLAG.search(pattern) is not None
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            index += 2
            if escaped == "Q":
                literal, index = _quoted(pattern, index)
                out.append(literal)
            elif escaped == "z":
                out.append("\\Z")
            elif escaped == "s":
                out.append(_GO_SPACE if in_class else f"[{_GO_SPACE}]")
            elif escaped == "S" and not in_class:
                out.append(f"[^{_GO_SPACE}]")
            else:
                out.append("\\" + escaped)
            continue
        if in_class:
            posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[index:])
            if posix and posix.group(2) in _POSIX and not posix.group(1):
                out.append(_POSIX[posix.group(2)])
                index += posix.end()
                continue
            if char == "]" and not _class_just_opened(out):
                in_class = False
            elif char == "[":
                char = "\\["  # a literal in a Go class; Python warns of nested sets
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == "$" and not multiline:
            out.append("\\Z")
        elif pattern.startswith("(?<", index) and pattern[index + 3 : index + 4] not in ("=", "!"):
            out.append("(?P<")
            index += 3
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _class_just_opened(out: list[str]) -> bool:
    """A `]` right after `[` or `[^` is a literal member, in Go as in Python."""
    return bool(out) and (out[-1] == "[" or (out[-1] == "^" and len(out) > 1 and out[-2] == "["))


@functools.lru_cache(maxsize=1024)
def go_regexp(pattern: str) -> re.Pattern[str]:
    """`pattern` (Go's RE2 syntax) compiled to match what Go's regexp matches; `re.error` when
    Python cannot express it (see the module docstring)."""
    return re.compile(_translate(pattern), re.ASCII)


def go_match(pattern: str, text: str) -> bool:
    """Go's `regexp.MatchString(pattern, text)`: whether `pattern` matches anywhere in `text`."""
    return go_regexp(pattern).search(text) is not None
