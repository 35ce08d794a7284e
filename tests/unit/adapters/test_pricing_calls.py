"""The pricing call bound every cloud's Pricing adapter shares: a refused call is never made, a
failed one is named by its code and never by its text, and a read that learned nothing fails."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpupool.adapters.pricing_calls import ReadProblems, bounded_call
from gpupool.core.catalog.live import LivePrices
from gpupool.service.pricing_ports import CallBudget, PricingUnavailable


class _SdkError(Exception):
    code = "Throttling"


def _refuse(error: Exception) -> str:
    return getattr(error, "code", "")


def test_a_call_past_the_bound_is_not_made() -> None:
    budget = CallBudget(1, 60)
    made: list[str] = []

    def call(name: str) -> int:
        made.append(name)
        return len(made)

    assert bounded_call(budget, "A", lambda: call("A"), errors=(_SdkError,), describe=_refuse) == 1
    with pytest.raises(PricingUnavailable, match="B not made: the read's bound of 1 calls is spent"):
        bounded_call(budget, "B", lambda: call("B"), errors=(_SdkError,), describe=_refuse)
    assert made == ["A"] and budget.calls == ["A"]


def test_a_failed_call_names_its_code_not_its_text() -> None:
    def fail() -> None:
        raise _SdkError("secret=AKIA-in-the-request")

    with pytest.raises(PricingUnavailable) as raised:
        bounded_call(CallBudget(2, 60), "GetProducts", fail, errors=(_SdkError,), describe=_refuse)
    assert str(raised.value) == "GetProducts failed: Throttling"


def test_an_error_outside_the_sdks_is_not_swallowed() -> None:
    def fail() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        bounded_call(CallBudget(2, 60), "A", fail, errors=(_SdkError,), describe=_refuse)


def test_problems_keep_each_failed_part_and_a_read_that_learned_nothing_fails() -> None:
    problems = ReadProblems()
    nothing_read: dict[str, str] = {}

    def refused() -> dict[str, str]:
        raise PricingUnavailable("A failed: Throttling")

    def read() -> dict[str, str]:
        return {"x": "y"}

    assert problems.attempt(refused, nothing_read) == {}
    assert problems.attempt(read, nothing_read) == {"x": "y"}
    now = datetime(2026, 1, 1, tzinfo=UTC)
    empty = LivePrices(region="r", read_at=now, on_demand_source="s", spot_source="s")
    with pytest.raises(PricingUnavailable, match=r"^A failed: Throttling$"):
        problems.finish(empty, "nothing")
    with pytest.raises(PricingUnavailable, match=r"^nothing$"):
        ReadProblems().finish(empty, "nothing")
