"""The PromQL subset the alert tests rely on: precedence, matching, increase with resets, lookback,
`for`, and a clear error for syntax outside the subset (so no rule is half-evaluated)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from promql_subset import PromqlError, evaluate, firing, parse

A = {"node": "a"}
B = {"node": "b"}
SERIES = [
    ("used", A, [(0, 30.0), (60, 60.0)]),
    ("used", B, [(0, 10.0)]),
    ("total", A, [(0, 100.0)]),
    ("total", B, [(0, 50.0)]),
    ("hits_total", A, [(0, 5.0), (30, 8.0), (60, 2.0), (90, 4.0)]),  # reset after 8
]


def at(expr: str, time: float = 60.0) -> object:
    return evaluate(parse(expr), SERIES, time)


def test_arithmetic_binds_tighter_than_comparison_and_matches_labels() -> None:
    assert at("100 * used / total > 40") == {frozenset(A.items()): 60.0}
    assert at("1 + 2 * 3") == 7.0


def test_matchers_and_aggregations() -> None:
    assert at('used{node=~"a|b"}') == at("used")
    assert at('used{node!="a"}') == {frozenset({("__name__", "used"), *B.items()}): 10.0}
    assert at("sum(used)") == {frozenset(): 70.0}
    assert at("max by (node) (used)") == at("max(used) by (node)")


def test_increase_adds_counter_resets_back() -> None:
    # 5 → 8 (+3), reset to 2 (+2), → 4 (+2): 7 over the window
    assert at("increase(hits_total[2m])", 90) == {frozenset(A.items()): 7.0}
    assert at("rate(hits_total[2m])", 90) == {frozenset(A.items()): 7.0 / 120}


def test_and_or_by_label_set() -> None:
    assert at("used > 20 and total > 0") == {frozenset({("__name__", "used"), *A.items()}): 60.0}
    assert set(at("used > 20 or total > 0")) == {  # type: ignore[call-overload]
        frozenset({("__name__", "used"), *A.items()}),
        frozenset({("__name__", "total"), *B.items()}),
    }


def test_old_samples_fall_out_of_the_lookback() -> None:
    # at 350 s: a's sample at 60 s is within 5 minutes, b's at 0 s is not
    assert at("used", 350) == {frozenset({("__name__", "used"), *A.items()}): 60.0}
    assert at("used", 400) == {}


def test_for_needs_the_condition_to_hold_long_enough() -> None:
    series = [("x", A, [(t, 1.0 if t >= 60 else 0.0) for t in range(0, 181, 15)])]
    times = list(range(0, 181, 15))
    assert firing("x > 0", "2m", series, times) == {frozenset(A.items())}
    assert firing("x > 0", "3m", series, times) == set()


@pytest.mark.parametrize(
    "expr", ["clamp_min(x, 0)", "x offset 5m", "x unless y", "sum without (a) (x)", "x[5m]", "x +"]
)
def test_syntax_outside_the_subset_is_refused(expr: str) -> None:
    with pytest.raises(PromqlError):
        parse(expr)


def test_histogram_quantile_interpolates_in_the_bucket_as_prometheus_does() -> None:
    # 10 observations: 4 under 0.1 s, 9 under 0.5 s, all under +Inf — per route
    series = [
        ("lat_bucket", {"route": "r", "le": le}, [(0, 0.0), (60, count)])
        for le, count in (("0.1", 4.0), ("0.5", 9.0), ("+Inf", 10.0))
    ]

    def quantile(phi: str) -> object:
        return evaluate(
            parse(f"histogram_quantile({phi}, sum by (le, route) (increase(lat_bucket[5m])))"), series, 60
        )

    route = frozenset({("route", "r")})
    assert quantile("0.2") == {route: 0.05}  # rank 2 of the first bucket's 4, from 0
    assert quantile("0.5") == {route: pytest.approx(0.1 + 0.4 * (1 / 5))}  # rank 5: 1 of the next 5
    assert quantile("0.95") == {route: 0.5}  # in the +Inf bucket: the highest finite bound
    with pytest.raises(PromqlError, match="number literal"):
        parse("histogram_quantile(x, lat_bucket)")
