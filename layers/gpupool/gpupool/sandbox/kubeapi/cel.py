"""The CEL validation rules (`x-kubernetes-validations`) the embedded API server can evaluate.

Role: the sandbox has no CEL interpreter. It evaluates a rule by its exact text, with a Python
check written for that text (`RuleCheck(self, old_self) -> bool`), keeping CEL's semantics where
they decide an outcome: a missing optional field read in a rule is a runtime error (`no such
key: <field>`), `int()` of a string that is not a base-10 integer is one, `all()` is false when
any element is false and an error only when none is and one errored, `&&` / `||` / `?:` skip
what they need not evaluate. `evaluate(rule, self, old)` answers None (the rule holds), the
rule's failure, or its runtime error, as apiextensions-apiserver words them
(`pkg/apiserver/schema/cel/validation.go`): a false rule on an object or an array is `Invalid
value: <message>` (the value omitted), on a scalar `Invalid value: "<value>": <message>`; a
runtime error is `Invalid value: "<type>": <error> evaluating rule: <message>`. A transition
rule (one that reads `oldSelf`) runs only where the old object has a value to compare, as
upstream. `known_rules()` is every rule text with a check (`cel_karpenter` holds Karpenter's);
a CRD carrying any other rule is refused when it is created (`crd.validate_crd`) — the sandbox
cannot enforce it, so it does not pretend to.

Simpler than the real server: no `messageExpression`, `reason`, `fieldPath` or
`optionalOldSelf`, no cost budget, no validation ratcheting (an update is held to every rule,
unchanged fields too).

Must not: touch storage or know any resource; it maps a rule and values to a verdict.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpupool.core.goregexp import go_regexp
from gpupool.sandbox.kubeapi.errors import go_quote

__all__ = [
    "RuleCheck",
    "RuleError",
    "cel_all",
    "cel_int",
    "evaluate",
    "field",
    "has",
    "is_known",
    "known_rules",
    "uses_old_self",
]

RuleCheck = Callable[[Any, Any], bool]

_GO_INT = go_regexp(r"^[+-]?[0-9]+$")
_INT64 = (-(2**63), 2**63 - 1)


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
    number = int(text)
    if not _INT64[0] <= number <= _INT64[1]:
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


def uses_old_self(rule: str) -> bool:
    """Whether `rule` is a transition rule (it compares with the stored object)."""
    return re.search(r"\boldSelf\b", rule) is not None


@functools.cache
def known_rules() -> Mapping[str, RuleCheck]:
    """Every rule text the sandbox evaluates, with its check (imported on first use: the
    checks are written with this module's helpers)."""
    from gpupool.sandbox.kubeapi.cel_karpenter import KARPENTER_RULES

    return dict(KARPENTER_RULES)


def is_known(rule: str) -> bool:
    return rule in known_rules()


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return go_quote(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def evaluate(rule: Mapping[str, Any], self_value: Any, old_value: Any, *, has_old: bool) -> str | None:
    """None when `rule` (an `x-kubernetes-validations` entry) holds for `self_value`, else the
    cause message the server gives; a transition rule without an old value holds (is skipped)."""
    text = str(rule.get("rule") or "")
    message = str(rule.get("message") or "").strip() or f"failed rule: {text.strip()}"
    described = str(rule.get("message") or "").strip() or text.strip()
    if uses_old_self(text) and not has_old:
        return None
    check = known_rules().get(text)
    if check is None:
        kind = _type_name(self_value)
        return f'Invalid value: "{kind}": rule compile error: the sandbox cannot evaluate {text!r}'
    try:
        holds = check(self_value, old_value)
    except RuleError as error:
        return f'Invalid value: "{_type_name(self_value)}": {error} evaluating rule: {described}'
    if holds:
        return None
    if isinstance(self_value, (Mapping, list)):
        return f"Invalid value: {message}"
    return f"Invalid value: {_shown(self_value)}: {message}"
