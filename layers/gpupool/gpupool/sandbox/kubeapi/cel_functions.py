"""The CEL functions the sandbox's rule checks are written with, keeping CEL's semantics.

Role: `RuleCheck` (a rule's check: `(self, old_self) -> bool`), `RuleError` (a CEL runtime
error), `field` (a structural object's field; absent: `no such key`), `has`, `cel_int` (`int()` of
a string: Go's base-10 ParseInt, else a type conversion error, or an overflow) and `cel_all`
(`all()`: false when any element is false, an error only when none is and one errored). The
rules themselves (`cel_karpenter`) and their evaluation (`cel`) build on these.

Must not: know any rule or any resource.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpupool.core.goregexp import go_regexp
from gpupool.core.model.requirements import integer

__all__ = ["RuleCheck", "RuleError", "cel_all", "cel_int", "field", "has"]

RuleCheck = Callable[[Any, Any], bool]

_GO_INT = go_regexp(r"^[+-]?[0-9]+$")


class RuleError(Exception):
    """A CEL runtime error; its text is what the server reports before `evaluating rule`."""


def field(value: Any, name: str) -> Any:
    """`value.name` as CEL reads a structural object: absent → `no such key: name`."""
    if not isinstance(value, Mapping) or name not in value:
        raise RuleError(f"no such key: {name}")
    return value[name]


def has(value: Any, name: str) -> bool:
    """CEL's `has(value.name)`."""
    return isinstance(value, Mapping) and name in value


def cel_int(text: Any) -> int:
    """CEL's `int(string)`: Go's base-10 ParseInt (an optional sign, digits, nothing else)."""
    if not isinstance(text, str) or not _GO_INT.match(text):
        raise RuleError("type conversion error from 'string' to 'int'")  # cel-go's words, no more
    number = integer(text)  # the same ParseInt as node-selector requirements
    if number is None:
        raise RuleError("integer overflow")
    return number


def cel_all(items: Iterable[Any], predicate: Callable[[Any], bool]) -> bool:
    """CEL's `all()`: false when any element is false, else an error when one errored."""
    error: RuleError | None = None
    for item in items:
        try:
            if not predicate(item):
                return False
        except RuleError as raised:
            error = error or raised
    if error is not None:
        raise error
    return True
