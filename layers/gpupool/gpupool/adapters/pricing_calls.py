"""What every cloud's Pricing adapter shares: one call within a read's bound, the read's failures.

Role: `bounded_call(budget, operation, call, errors=…, describe=…)` spends the read's
`CallBudget` first (PricingUnavailable naming the call when the bound refuses it), then makes the
call, turning an error of the cloud's SDK (`errors`) into PricingUnavailable naming the operation
and `describe(error)` — the error's code or type, never its text, which may echo the request.
`ReadProblems` is one read's list of the parts that failed: `attempt(read, default)` runs a part
and, when it raises PricingUnavailable, keeps its message and returns `default` (the catalog then
stands in for that part); `finish(live, nothing)` returns the read, or raises PricingUnavailable
when it learned nothing.

Must not: name a cloud's API, import a cloud SDK, retry, or decide prices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from gpupool.service.pricing_ports import CallBudget, PricingUnavailable

if TYPE_CHECKING:
    from gpupool.core.catalog.live import LivePrices

__all__ = ["ReadProblems", "bounded_call"]

T = TypeVar("T")


def bounded_call(
    budget: CallBudget,
    operation: str,
    call: Callable[[], T],
    *,
    errors: tuple[type[Exception], ...],
    describe: Callable[[Exception], str],
) -> T:
    """`call()`'s answer, the budget spent on `operation` first; PricingUnavailable when the bound
    refuses the call or the call raises one of `errors`."""
    budget.spend(operation)  # PricingUnavailable when refused: the call is not made
    try:
        return call()
    except errors as error:
        raise PricingUnavailable(f"{operation} failed: {describe(error)}") from None


class ReadProblems:
    """The parts of one pricing read that failed, in order, each as its PricingUnavailable said."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def note(self, message: str) -> None:
        self.messages.append(message)

    def attempt(self, read: Callable[[], T], default: T) -> T:
        """`read()`, or `default` with the failure noted when it raises PricingUnavailable."""
        try:
            return read()
        except PricingUnavailable as failed:
            self.note(str(failed))
            return default

    def finish(self, live: LivePrices, nothing: str) -> LivePrices:
        """`live`, or PricingUnavailable (the problems, else `nothing`) when it learned nothing."""
        if live.empty:
            raise PricingUnavailable("; ".join(self.messages) or nothing)
        return live
