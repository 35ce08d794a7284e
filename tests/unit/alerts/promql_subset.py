"""A small PromQL subset evaluator for testing the chart's alert rules (promtool is not available).

Role: parse an expression and evaluate it over sample series at a time, and play a rule's `for`
over a run of evaluations. Supported, with Prometheus's precedence (`* /` > `+ -` > comparisons >
`and` > `or`): number literals; instant selectors `name{label="v", label!="v", label=~"re",
label!~"re"}` (5-minute lookback); `increase` / `rate` over a range selector (last − first
sample, counter resets added back, no extrapolation — a documented simplification);
`histogram_quantile(φ, v)` (Prometheus's bucket interpolation: the `le` buckets of each label set,
cumulative, ending in `+Inf`; the lower bound of the first bucket is 0; a rank in the `+Inf`
bucket gives the highest finite bound; no buckets or no observations give NaN);
`sum` / `min` / `max` / `avg` / `count` with `by (...)` before or after the argument; arithmetic
and comparison between scalars and vectors and between vectors (one-to-one on every label but
the metric name; a comparison keeps the left sample where it holds); `and` / `or` by label set.
Anything else raises `PromqlError`, so a rule using syntax outside the subset fails its test
instead of being half-evaluated.

Must not: be used by the product (tests only).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["PromqlError", "Series", "evaluate", "firing", "metric_names", "parse", "seconds"]

Labels = frozenset[tuple[str, str]]
Vector = dict[Labels, float]
Value = float | Vector
# (metric name, labels, samples (seconds, value) in time order), one entry per series
Series = Sequence[tuple[str, Mapping[str, str], Sequence[tuple[float, float]]]]
LOOKBACK = 300.0
_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)(?P<unit>[smh])?|(?P<str>\"[^\"]*\")|(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)"
    r"|(?P<op>==|!=|>=|<=|=~|!~|[-+*/<>=(){}\[\],]))"
)
_ARITH: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": lambda a, b: a / b if b else float("nan"),
}
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}
_AGGREGATE: dict[str, Callable[[list[float]], float]] = {
    "sum": sum,
    "min": min,
    "max": max,
    "avg": lambda xs: sum(xs) / len(xs),
    "count": lambda xs: float(len(xs)),
}


class PromqlError(ValueError):
    """An expression outside the supported subset, or malformed."""


def seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smh])", text.strip())
    if not match:
        raise PromqlError(f"not a duration: {text!r}")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2)]


@dataclass(frozen=True)
class Node:
    kind: str  # num | sel | range_fn | agg | quantile | binop
    value: float = 0.0
    name: str = ""
    matchers: tuple[tuple[str, str, str], ...] = ()
    window: float = 0.0
    by: tuple[str, ...] = ()
    args: tuple[Node, ...] = ()


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text.rstrip()):
            match = _TOKEN.match(text, position)
            if not match or match.end() == position:
                raise PromqlError(f"cannot read {text[position:]!r}")
            position = match.end()
            kind = next(k for k in ("num", "str", "name", "op") if match.group(k) is not None)
            value = match.group(kind) + ((match.group("unit") or "") if kind == "num" else "")
            self.tokens.append(("dur" if kind == "num" and match.group("unit") else kind, value))
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, expected: str | None = None) -> str:
        kind, value = self.peek()
        if kind == "end" or (expected is not None and value != expected):
            raise PromqlError(f"expected {expected or 'a token'}, found {value or 'the end'}")
        self.at += 1
        return value

    def binary(self, level: int) -> Node:
        levels: list[set[str]] = [{"or"}, {"and"}, set(_COMPARE), {"+", "-"}, {"*", "/"}]
        if level == len(levels):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[1] in levels[level]:
            op = self.take()
            left = Node("binop", name=op, args=(left, self.binary(level + 1)))
        return left

    def labels(self) -> tuple[str, ...]:
        self.take("(")
        names = [self.take()]
        while self.peek()[1] == ",":
            self.take(",")
            names.append(self.take())
        self.take(")")
        return tuple(names)

    def unary(self) -> Node:
        kind, value = self.peek()
        if kind == "num":
            return Node("num", value=float(self.take()))
        if value == "(":
            self.take("(")
            inner = self.binary(0)
            self.take(")")
            return inner
        if kind != "name":
            raise PromqlError(f"unexpected {value or 'end'}")
        name = self.take()
        if name in _AGGREGATE:
            by: tuple[str, ...] = ()
            if self.peek()[1] == "by":
                self.take("by")
                by = self.labels()
            self.take("(")
            argument = self.binary(0)
            self.take(")")
            if not by and self.peek()[1] == "by":
                self.take()
                by = self.labels()
            return Node("agg", name=name, by=by, args=(argument,))
        if name == "histogram_quantile":
            self.take("(")
            phi = self.unary()
            if phi.kind != "num":
                raise PromqlError("histogram_quantile takes a number literal as its quantile")
            self.take(",")
            buckets = self.binary(0)
            self.take(")")
            return Node("quantile", value=phi.value, args=(buckets,))
        if name in ("increase", "rate"):
            self.take("(")
            selector = self.selector(self.take())
            self.take("[")
            window = seconds(self.take())
            self.take("]")
            self.take(")")
            return Node("range_fn", name=name, window=window, args=(selector,))
        if self.peek()[1] == "(":
            raise PromqlError(f"function {name} is outside the subset")
        return self.selector(name)

    def selector(self, name: str) -> Node:
        matchers: list[tuple[str, str, str]] = []
        if self.peek()[1] == "{":
            self.take("{")
            while self.peek()[1] != "}":
                label, op, text = self.take(), self.take(), self.take()
                if op not in ("=", "!=", "=~", "!~") or not text.startswith('"'):
                    raise PromqlError(f"bad matcher {label}{op}{text}")
                matchers.append((label, op, text[1:-1]))
                if self.peek()[1] == ",":
                    self.take(",")
            self.take("}")
        return Node("sel", name=name, matchers=tuple(matchers))


def parse(text: str) -> Node:
    parser = _Parser(text)
    tree = parser.binary(0)
    if parser.peek()[0] != "end":
        raise PromqlError(f"unexpected {parser.peek()[1]!r} after the expression")
    return tree


def metric_names(tree: Node) -> set[str]:
    """Every metric name the expression selects."""
    own = {tree.name} if tree.kind == "sel" else set()
    return own.union(*(metric_names(a) for a in tree.args))


def _matches(labels: Mapping[str, str], matchers: Iterable[tuple[str, str, str]]) -> bool:
    for label, op, text in matchers:
        value = labels.get(label, "")
        hit = value == text if op in ("=", "!=") else re.fullmatch(text, value) is not None
        if hit != (op in ("=", "=~")):
            return False
    return True


def _key(labels: Labels) -> Labels:
    return frozenset((k, v) for k, v in labels if k != "__name__")


def _samples(series: Series, node: Node) -> Iterable[tuple[Labels, Sequence[tuple[float, float]]]]:
    for name, labels, points in series:
        if name == node.name and _matches(labels, node.matchers):
            yield frozenset({**labels, "__name__": name}.items()), points


def _binop(op: str, left: Value, right: Value) -> Value:
    if op in ("and", "or"):
        if not isinstance(left, dict) or not isinstance(right, dict):
            raise PromqlError(f"{op} needs vectors on both sides")
        keys = {_key(k) for k in left}
        if op == "and":
            rights = {_key(k) for k in right}
            return {k: v for k, v in left.items() if _key(k) in rights}
        return {**left, **{k: v for k, v in right.items() if _key(k) not in keys}}
    if not isinstance(left, dict) and not isinstance(right, dict):
        return _ARITH[op](left, right) if op in _ARITH else float(_COMPARE[op](left, right))
    pairs: list[tuple[Labels, float, float]] = []
    if isinstance(left, dict) and isinstance(right, dict):
        by_key = {_key(k): v for k, v in right.items()}
        pairs = [(k, v, by_key[_key(k)]) for k, v in left.items() if _key(k) in by_key]
    elif isinstance(left, dict):
        pairs = [(k, v, float(right)) for k, v in left.items()]  # type: ignore[arg-type]
    else:
        assert isinstance(right, dict)
        pairs = [(k, float(left), v) for k, v in right.items()]
    if op in _ARITH:
        return {_key(k): _ARITH[op](a, b) for k, a, b in pairs}
    if isinstance(left, dict):
        return {k: a for k, a, b in pairs if _COMPARE[op](a, b)}
    return {k: b for k, a, b in pairs if _COMPARE[op](a, b)}


def _bucket_quantile(phi: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus's bucketQuantile over (upper bound, cumulative count) pairs."""
    if phi < 0:
        return float("-inf")
    if phi > 1:
        return float("inf")
    buckets = sorted(buckets)
    if len(buckets) < 2 or buckets[-1][0] != float("inf") or buckets[-1][1] == 0:
        return float("nan")
    rank = phi * buckets[-1][1]
    index = next(i for i, (_, count) in enumerate(buckets) if count >= rank)
    if index == len(buckets) - 1:
        return buckets[-2][0]
    end, count = buckets[index]
    start, below = (0.0, 0.0) if index == 0 else buckets[index - 1]
    if index == 0 and end <= 0:
        return end
    return start + (end - start) * ((rank - below) / (count - below)) if count > below else end


def evaluate(tree: Node, series: Series, at: float) -> Value:
    """The expression's value at time `at` (seconds) over `series`."""
    if tree.kind == "num":
        return tree.value
    if tree.kind == "sel":
        out: Vector = {}
        for labels, points in _samples(series, tree):
            recent = [v for t, v in points if at - LOOKBACK < t <= at]
            if recent:
                out[labels] = recent[-1]
        return out
    if tree.kind == "range_fn":
        out = {}
        for labels, points in _samples(series, tree.args[0]):
            window = [v for t, v in points if at - tree.window < t <= at]
            if len(window) < 2:
                continue
            grown = window[-1] - window[0] + sum(a for a, b in itertools.pairwise(window) if b < a)
            out[_key(labels)] = grown / tree.window if tree.name == "rate" else grown
        return out
    if tree.kind == "agg":
        inner = evaluate(tree.args[0], series, at)
        if not isinstance(inner, dict):
            raise PromqlError(f"{tree.name} needs a vector")
        groups: dict[Labels, list[float]] = {}
        for labels, value in inner.items():
            group = frozenset((k, v) for k, v in labels if k in tree.by)
            groups.setdefault(group, []).append(value)
        return {group: _AGGREGATE[tree.name](values) for group, values in groups.items()}
    if tree.kind == "quantile":
        inner = evaluate(tree.args[0], series, at)
        if not isinstance(inner, dict):
            raise PromqlError("histogram_quantile needs a vector")
        grouped: dict[Labels, list[tuple[float, float]]] = {}
        for labels, value in inner.items():
            bound = dict(labels).get("le")
            if bound is None:
                continue
            group = frozenset((k, v) for k, v in labels if k not in ("le", "__name__"))
            grouped.setdefault(group, []).append((float(bound), value))
        return {group: _bucket_quantile(tree.value, found) for group, found in grouped.items()}
    left, right = (evaluate(a, series, at) for a in tree.args)
    return _binop(tree.name, left, right)


def firing(expr: str, hold: str | None, series: Series, times: Iterable[float]) -> set[Labels]:
    """The label sets an alerting rule fires for after evaluations at `times`: present in every
    result for at least `hold` (Prometheus's `for`; none: at once)."""
    tree = parse(expr)
    needed = seconds(hold) if hold else 0.0
    since: dict[Labels, float] = {}
    last = 0.0
    for at in times:
        result = evaluate(tree, series, at)
        if not isinstance(result, dict):
            raise PromqlError("an alert expression must give a vector")
        present = {_key(k) for k in result}
        since = {k: since.get(k, at) for k in present}
        last = at
    return {k for k, start in since.items() if last - start >= needed}
