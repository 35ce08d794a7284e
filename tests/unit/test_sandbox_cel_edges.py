"""Two CEL edge cases the embedded API server's rule checks keep (issue 33, surviving mutations):
`int(string)` is Go's 64-bit ParseInt — an optional sign, base-10 digits, nothing else, and an
overflow past int64 is a runtime error, not a big number; `all()` is false when any element is
false even when another element errored (CEL's commutative error absorption), and an error only
when none is false.
"""

from __future__ import annotations

import pytest

from gpupool.sandbox.kubeapi.cel import RuleError, cel_all, cel_int


@pytest.mark.parametrize(
    ("text", "number"),
    [("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63)), ("+5", 5), ("007", 7)],
)
def test_int_reads_every_int64(text: str, number: int) -> None:
    assert cel_int(text) == number


@pytest.mark.parametrize("text", ["9223372036854775808", "-9223372036854775809", "99999999999999999999"])
def test_int_past_int64_is_an_overflow_error(text: str) -> None:
    with pytest.raises(RuleError, match="overflow"):
        cel_int(text)


@pytest.mark.parametrize("text", ["", " 5", "5 ", "5.0", "0x10", "1e3", "--1", "٣", 5])
def test_int_of_anything_but_base_10_digits_is_a_conversion_error(text: object) -> None:
    with pytest.raises(RuleError, match="type conversion error"):
        cel_int(text)


def _errs(_: object) -> bool:
    raise RuleError("no such key: values")


def test_all_is_false_when_one_element_is_false_whatever_errored_before_or_after() -> None:
    assert cel_all([1, 2], lambda x: _errs(x) if x == 1 else False) is False
    assert cel_all([2, 1], lambda x: _errs(x) if x == 1 else False) is False


def test_all_is_an_error_only_when_no_element_is_false() -> None:
    with pytest.raises(RuleError, match="no such key"):
        cel_all([1, 2], lambda x: _errs(x) if x == 1 else True)
    assert cel_all([], _errs) is True
