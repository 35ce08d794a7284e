"""The one requirement algebra (`core.model.requirements`): Kubernetes' and Karpenter's semantics.

Covers: each operator case by case as Kubernetes (`labels.Requirement.Matches` for a
NodeSelectorRequirement: absent labels, `strconv.ParseInt` integers, a malformed Gt/Lt matching
nothing) and Karpenter (Gte, Lte, minValues, keys a reader cannot judge) read it; a pod's
nodeSelector and required terms; generated cases compared with a plain reference written here,
independently of the module; and that no other module of the package matches requirements itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupool.core.model.requirements import (
    KARPENTER_OPERATORS,
    Expression,
    all_hold,
    failing,
    holds,
    integer,
    min_values_shortfall,
    pod_node_terms,
    terms_allow,
)

INT64_MAX = 9223372036854775807


@pytest.mark.parametrize(
    ("operator", "values", "value", "expected"),
    [
        # In / NotIn: an absent label is never In and always NotIn.
        ("In", ["a", "b"], "a", True),
        ("In", ["a", "b"], "c", False),
        ("In", ["a"], None, False),
        ("In", [""], "", True),
        ("NotIn", ["a"], "a", False),
        ("NotIn", ["a"], "b", True),
        ("NotIn", ["a"], None, True),
        # Exists / DoesNotExist look at presence only (an empty value is present).
        ("Exists", [], "", True),
        ("Exists", [], None, False),
        ("DoesNotExist", [], None, True),
        ("DoesNotExist", [], "x", False),
        # Gt / Lt: strict, on base-10 64-bit integers, the label present.
        ("Gt", ["4"], "5", True),
        ("Gt", ["5"], "5", False),
        ("Lt", ["5"], "4", True),
        ("Lt", ["5"], "5", False),
        ("Gt", ["-1"], "0", True),
        ("Lt", ["0"], "-3", True),
        ("Gt", ["4"], "+5", True),
        ("Gt", ["4"], None, False),
        ("Lt", ["4"], None, False),
        ("Gt", ["4"], "five", False),
        ("Gt", ["4"], " 5", False),  # ParseInt takes no spaces
        ("Gt", ["4"], "5.0", False),
        ("Gt", ["4"], "١٢", False),  # nor non-ASCII digits
        ("Gt", ["0"], str(INT64_MAX), True),
        ("Gt", ["0"], str(INT64_MAX + 1), False),  # out of range: no match
        ("Gt", ["x"], "5", False),  # a malformed bound matches nothing
        ("Gt", ["1", "2"], "5", False),  # exactly one value
        ("Gt", [], "5", False),
        # Karpenter's Gte / Lte: inclusive.
        ("Gte", ["5"], "5", True),
        ("Gte", ["5"], "4", False),
        ("Lte", ["5"], "5", True),
        ("Lte", ["5"], "6", False),
        ("Gte", ["5"], None, False),
        # An operator neither knows matches nothing.
        ("Equals", ["a"], "a", False),
        ("in", ["a"], "a", False),
    ],
)
def test_each_operator_as_kubernetes_and_karpenter_read_it(
    operator: str, values: list[str], value: str | None, expected: bool
) -> None:
    assert holds(operator, values, value) is expected


def test_requirements_are_anded_and_unjudged_keys_hold() -> None:
    requirements = [Expression("zone", "In", ("a",)), Expression("custom", "Exists")]
    assert not all_hold(requirements, {"zone": "a"})
    assert failing(requirements, {"zone": "a"}) == Expression("custom", "Exists")
    assert all_hold(requirements, {"zone": "a"}, judged={"zone"})
    assert failing(requirements, {"zone": "b"}, judged={"zone"}) == Expression("zone", "In", ("a",))
    assert all_hold([], {})


def test_a_pods_selector_and_terms() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "type", "operator": "In", "values": ["a"]}]},
                    {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]},
                ]
            }
        }
    }
    terms = pod_node_terms({"gpu": "yes"}, affinity)
    assert terms == (
        (Expression("gpu", "In", ("yes",)), Expression("type", "In", ("a",))),
        (Expression("gpu", "In", ("yes",)), Expression("zone", "NotIn", ("z1",))),
    )
    assert terms_allow(terms, {"gpu": "yes", "type": "a", "zone": "z1"})
    assert terms_allow(terms, {"gpu": "yes", "type": "b", "zone": "z2"})  # the second term
    assert not terms_allow(terms, {"gpu": "yes", "type": "b", "zone": "z1"})
    assert not terms_allow(terms, {"type": "a"})  # the nodeSelector is in every term
    assert terms_allow(terms, {"type": "b", "zone": "z2"}, judged={"type", "zone"})
    assert pod_node_terms({}, None) == ((),)
    assert terms_allow(pod_node_terms({}, None), {})


@dataclass(frozen=True)
class MinValues:
    key: str
    operator: str
    values: tuple[str, ...]
    min_values: int | None


def test_min_values_counts_distinct_values_among_the_allowed() -> None:
    types = MinValues("type", "In", ("a", "b", "c"), 2)
    zones = MinValues("zone", "Exists", (), None)
    allowed = [{"type": "a", "zone": "1"}, {"type": "a", "zone": "2"}]
    assert min_values_shortfall([types, zones], allowed) == [(types, 1)]
    assert min_values_shortfall([types, zones], [*allowed, {"type": "b"}]) == []
    assert min_values_shortfall([zones], []) == []


# ---- generated cases against a plain reference --------------------------------------------------

DIGITS = "0123456789"


def reference_int(text: str) -> int | None:
    """Go's ParseInt(text, 10, 64), spelled out character by character."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(ch not in DIGITS for ch in body):
        return None
    number = 0
    for ch in body:
        number = number * 10 + DIGITS.index(ch)
    number = -number if text.startswith("-") else number
    return number if -(2**63) <= number < 2**63 else None


def reference_holds(operator: str, values: list[str], value: str | None) -> bool:
    present = value is not None
    table = {
        "In": lambda: present and value in set(values),
        "NotIn": lambda: not present or value not in set(values),
        "Exists": lambda: present,
        "DoesNotExist": lambda: not present,
    }
    if operator in table:
        return bool(table[operator]())
    if operator not in ("Gt", "Lt", "Gte", "Lte") or len(values) != 1 or value is None:
        return False
    have, bound = reference_int(value), reference_int(values[0])
    if have is None or bound is None:
        return False
    difference = have - bound
    return {"Gt": difference > 0, "Lt": difference < 0, "Gte": difference >= 0, "Lte": difference <= 0}[
        operator
    ]


TEXTS = st.one_of(
    st.sampled_from(["a", "b", "", "0", "1", "-1", "+2", "07", " 3", "4 ", "1e3", "٣", str(INT64_MAX)]),
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.text(alphabet="+-0123456789ab ", max_size=5),
)
OPERATORS = st.sampled_from([*KARPENTER_OPERATORS, "Equals", "gt"])
KEYS = st.sampled_from(["k1", "k2", "k3"])
EXPRESSIONS = st.builds(Expression, KEYS, OPERATORS, st.lists(TEXTS, max_size=3).map(tuple))
LABELS = st.dictionaries(KEYS, TEXTS, max_size=3)


@given(OPERATORS, st.lists(TEXTS, max_size=3), st.one_of(st.none(), TEXTS))
def test_holds_agrees_with_the_reference(operator: str, values: list[str], value: str | None) -> None:
    assert holds(operator, values, value) == reference_holds(operator, values, value)


@given(TEXTS)
def test_integer_agrees_with_the_reference(text: str) -> None:
    assert integer(text) == reference_int(text)


@given(st.lists(EXPRESSIONS, max_size=4), LABELS, st.one_of(st.none(), st.sets(KEYS)))
def test_all_hold_agrees_with_the_reference(
    requirements: list[Expression], labels: dict[str, str], judged: set[str] | None
) -> None:
    expected = all(
        (judged is not None and r.key not in judged)
        or reference_holds(r.operator, list(r.values), labels.get(r.key))
        for r in requirements
    )
    assert all_hold(requirements, labels, judged=judged) == expected


@given(st.lists(st.lists(EXPRESSIONS, max_size=3), max_size=3), LABELS)
def test_terms_are_ored(terms: list[list[Expression]], labels: dict[str, str]) -> None:
    expected = any(
        all(reference_holds(r.operator, list(r.values), labels.get(r.key)) for r in t) for t in terms
    )
    assert terms_allow(terms, labels) == expected


@given(st.lists(TEXTS, min_size=1, max_size=3), st.one_of(st.none(), TEXTS))
def test_complements(values: list[str], value: str | None) -> None:
    assert holds("NotIn", values, value) is not holds("In", values, value)
    assert holds("DoesNotExist", [], value) is not holds("Exists", [], value)
    if (
        value is not None
        and integer(value) is not None
        and len(values) == 1
        and integer(values[0]) is not None
    ):
        assert holds("Gte", values, value) is not holds("Lt", values, value)
        assert holds("Lte", values, value) is not holds("Gt", values, value)


@given(
    st.lists(
        st.builds(MinValues, KEYS, st.just("Exists"), st.just(()), st.one_of(st.none(), st.integers(1, 4))),
        max_size=3,
    ),
    st.lists(LABELS, max_size=5),
)
def test_min_values_agrees_with_the_reference(
    requirements: list[MinValues], allowed: list[dict[str, str]]
) -> None:
    expected = []
    for r in requirements:
        if r.min_values is None:
            continue
        distinct = len({labels[r.key] for labels in allowed if r.key in labels})
        if distinct < r.min_values:
            expected.append((r, distinct))
    assert min_values_shortfall(requirements, allowed) == expected


# ---- one matcher -------------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[3] / "layers" / "gpupool" / "gpupool"
# A matcher decides a requirement by its operator (`operator == "NotIn"`, `case "DoesNotExist":`,
# `"Gte": lambda …`); `core/model/compat.py` only names NotIn as a gpupool extension.
_MATCHER = re.compile(r"""(==|case)\s*["'](NotIn|DoesNotExist|notin|!exists)["']|["']Gte["']\s*:\s*lambda""")
_ALLOWED = {"core/model/requirements.py", "core/model/compat.py"}


def test_no_other_module_matches_requirements_itself() -> None:
    found = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() not in _ALLOWED
        and _MATCHER.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
