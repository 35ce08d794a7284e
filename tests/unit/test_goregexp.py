"""go_regexp / go_match: a pattern matches in Python what it matches in Go's regexp (RE2), the
dialect the API server reads CRD patterns, CEL's matches() and its name rules in. Each row is
what Go's regexp.MatchString answers (Go's documented semantics, checked by hand)."""

from __future__ import annotations

import re

import pytest

from gpupool.core.goregexp import go_match, go_regexp

DURATION = r"^(([0-9]+(s|m|h))+|Never)$"

# (pattern, text, what Go answers)
ROWS: list[tuple[str, str, bool]] = [
    (DURATION, "720h", True),
    (DURATION, "Never", True),
    (DURATION, "720h\n", False),  # Go's `$` is the end of the text, never before a final newline
    (DURATION, "Never\n", False),
    (r"^[a-z]+$", "abc\n", False),
    (r"^[a-z]+\z", "abc\n", False),
    (r"^[a-z]+\z", "abc", True),
    (r"[$]", "a$b", True),  # `$` in a class is a literal
    (r"\$", "a$", True),
    (r"^\d+$", "٣", False),  # \d is ASCII in Go
    (r"^\w+$", "é", False),
    (r"^\s$", "\v", False),  # Go's \s has no vertical tab
    (r"^\s$", "\t", True),
    (r"^[[:alpha:]]+$", "abZ", True),
    (r"^[[:digit:]x]+$", "12x", True),
    (r"^[[:alpha:]]+$", "a1", False),
    (r"^\Q1.5$\E$", "1.5$", True),
    (r"^\Q1.5$\E$", "105$", False),
    (r"^(?<major>[0-9]+)$", "12", True),
    (r"^[]a]+$", "]a", True),
    (r"(?m)^a$", "a\nb", True),  # multi-line `$` is Python's `$`
    (r"karpenter", "x.karpenter.sh", True),  # unanchored: anywhere in the text
]


@pytest.mark.parametrize(("pattern", "text", "expected"), ROWS, ids=[f"{p!r} {t!r}" for p, t, _ in ROWS])
def test_a_pattern_matches_what_go_matches(pattern: str, text: str, expected: bool) -> None:
    assert go_match(pattern, text) is expected


def test_python_alone_would_accept_the_trailing_newline() -> None:
    assert re.search(DURATION, "720h\n") is not None  # the hole go_regexp closes
    assert go_regexp(DURATION).search("720h\n") is None


def test_a_compiled_pattern_is_reused() -> None:
    assert go_regexp(DURATION) is go_regexp(DURATION)
