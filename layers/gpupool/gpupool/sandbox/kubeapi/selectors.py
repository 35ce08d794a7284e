"""Label and field selectors, parsed and compiled once per request.

Label selectors support the full set-based grammar the client sends: `k=v`, `k==v`, `k!=v`,
`k in (a,b)`, `k notin (a,b)`, `k` and `!k`. As in Kubernetes, `!=` and `notin` also match
objects that lack the key. Field selectors support `=`, `==` and `!=` on the paths a resource
declares (always `metadata.name` and `metadata.namespace`), read as upstream's selectable field
sets do: the value at the path, except an Event's `source` (its `source.component`, else its
`reportingComponent`, as pkg/registry/core/event's ToSelectableFields).

Must not: touch storage; a compiled selector is a pure predicate over one object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from gpupool.core.goregexp import go_regexp
from gpupool.core.model.requirements import holds
from gpupool.sandbox.kubeapi.errors import bad_request

_NAME = go_regexp(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = go_regexp(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SET_REQUIREMENT = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")

Labels = Mapping[str, str]
# The selector grammar's operators as the one requirement algebra names them (core.model.requirements).
_OPERATORS = {"in": "In", "notin": "NotIn", "exists": "Exists", "!exists": "DoesNotExist"}


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "in", "notin", "exists", "!exists"
    values: frozenset[str]

    def matches(self, labels: Labels) -> bool:
        return holds(_OPERATORS[self.operator], self.values, labels.get(self.key))


def _check_key(key: str, selector: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (
        len(name) > 63
        or not _NAME.match(name)
        or (prefix and (len(prefix) > 253 or not _PREFIX.match(prefix)))
    ):
        raise bad_request(f'unable to parse requirement: invalid label key "{key}" in selector "{selector}"')


def _check_value(value: str, selector: str) -> None:
    if value and (len(value) > 63 or not _NAME.match(value)):
        raise bad_request(
            f'unable to parse requirement: invalid label value "{value}" in selector "{selector}"'
        )


def _split_top_level(selector: str) -> list[str]:
    """Split on commas outside parentheses (`a in (x,y),b` is two requirements)."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise bad_request(f'unable to parse requirement: unbalanced ")" in selector "{selector}"')
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise bad_request(f'unable to parse requirement: unbalanced "(" in selector "{selector}"')
    parts.append("".join(current))
    return parts


def _parse_requirement(text: str, selector: str) -> Requirement:
    if found := _SET_REQUIREMENT.match(text):
        negated, key, operator, raw_values = found.groups()
        if negated:
            raise bad_request(f'unable to parse requirement: unexpected "!" in "{text}"')
        values = frozenset(value.strip() for value in raw_values.split(","))
        _check_key(key, selector)
        for value in values:
            _check_value(value, selector)
        return Requirement(key, operator, values)
    if found := _EQUALITY.match(text):
        key, operator, value = found.groups()
        _check_key(key, selector)
        _check_value(value, selector)
        return Requirement(key, "notin" if operator == "!=" else "in", frozenset({value}))
    if found := _EXISTS.match(text):
        negated, key = found.groups()
        _check_key(key, selector)
        return Requirement(key, "!exists" if negated else "exists", frozenset())
    raise bad_request(f'unable to parse requirement: "{text.strip()}" in selector "{selector}"')


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Labels) -> bool:
        for requirement in self.requirements:  # noqa: SIM110 -- a plain loop: runs per object per list
            if not requirement.matches(labels):
                return False
        return True


def parse_label_selector(selector: str) -> LabelSelector:
    """Compile a `labelSelector` query value; an empty string selects everything."""
    if not selector.strip():
        return LabelSelector(())
    return LabelSelector(tuple(_parse_requirement(part, selector) for part in _split_top_level(selector)))


def selector_from_object(selector: Mapping[str, Any]) -> LabelSelector:
    """Compile a meta/v1 LabelSelector object (`matchLabels`, `matchExpressions`)."""
    requirements = [
        Requirement(str(key), "in", frozenset({str(value)}))
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    operators = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expression in selector.get("matchExpressions") or []:
        operator = operators.get(str(expression.get("operator")))
        if operator is None:
            raise bad_request(f"unsupported label selector operator {expression.get('operator')!r}")
        values = frozenset(str(value) for value in expression.get("values") or [])
        requirements.append(Requirement(str(expression.get("key")), operator, values))
    return LabelSelector(tuple(requirements))


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field path; missing fields read as the empty string."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def selectable_value(obj: Mapping[str, Any], path: str) -> str:
    """What a field selector compares at `path` (see the module docstring)."""
    if path == "source" and obj.get("kind") == "Event":
        return field_value(obj, "source.component") or field_value(obj, "reportingComponent")
    return field_value(obj, path)


FieldPredicate = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...]  # (path, equal?, value)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((selectable_value(obj, path) == value) == equal for path, equal, value in self.terms)

    def required_value(self, path: str) -> str | None:
        """The value an `=` term pins `path` to, so storage can use its index."""
        for term_path, equal, value in self.terms:
            if term_path == path and equal:
                return value
        return None


# Kinds with their own field-label conversion upstream (their error names the label bare); a
# custom resource's converter words it the same way. Others fall back to apimachinery's default.
_CONVERTED_KINDS = frozenset(
    {
        "Pod",
        "Node",
        "ReplicationController",
        "Event",
        "Namespace",
        "Secret",
        "Service",
        "CertificateSigningRequest",
    }
)


def unsupported_field(path: str, kind: str, *, custom: bool) -> str:
    """Upstream's words for a field selector on a path the kind does not index."""
    if custom or kind in _CONVERTED_KINDS:
        return f"field label not supported: {path}"
    if kind == "Job":
        return f'field label "{path}" not supported for Job'
    return f'"{path}" is not a known field selector: only "metadata.name", "metadata.namespace"'


def parse_field_selector(
    selector: str, supported: Collection[str], kind: str, *, custom: bool = False
) -> FieldSelector:
    """Compile a `fieldSelector`; a path the resource does not support is a 400, as upstream."""
    if not selector.strip():
        return FieldSelector(())
    terms: list[tuple[str, bool, str]] = []
    for part in selector.split(","):
        found = _EQUALITY.match(part)
        if found is None:
            raise bad_request(f'invalid field selector: "{part}"')
        path, operator, value = found.groups()
        if path not in supported:
            raise bad_request(unsupported_field(path, kind, custom=custom))
        terms.append((path, operator != "!=", value))
    return FieldSelector(tuple(terms))
