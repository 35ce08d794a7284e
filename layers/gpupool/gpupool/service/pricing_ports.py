"""The Pricing port: a cloud's live instance types, zone offerings and prices, read within bounds.

Role: `Pricing`, a Protocol whose method docstring is the contract; `CallBudget`, the bound one
read runs under (at most `max_calls` API calls, none started after its deadline), which every
adapter spends before each call; `PricingUnavailable`, what a read raises when it learned
nothing (the caller then prices from the shipped catalog and says why). Each cloud's package
implements the port in `gpupool.adapters.<cloud>.pricing`; service tests use a fake.

Must not: contain logic beyond counting calls and time, import an SDK, or read the catalog.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gpupool.core.catalog.live import LivePrices

__all__ = ["CallBudget", "Pricing", "PricingUnavailable"]


class PricingUnavailable(Exception):
    """A pricing read that learned nothing (every call failed, or the bound was spent first);
    the message says which call and why, never a credential."""


class CallBudget:
    """At most `max_calls` calls, none started once `seconds` have passed since it was made.

    `spend(call)` before each API call: it raises PricingUnavailable naming `call` when the bound
    is spent. A call already started ends within its client's own timeout, which the adapter
    sets to the bound's `seconds`: a read ends within twice its deadline at the worst."""

    def __init__(
        self, max_calls: int, seconds: float, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        if max_calls < 1 or seconds <= 0:
            raise ValueError("a call budget needs at least one call and a positive deadline")
        self.max_calls = max_calls
        self.seconds = seconds
        self._monotonic = monotonic
        self._deadline = monotonic() + seconds
        self.calls: list[str] = []

    def spend(self, call: str) -> None:
        """Count one call about to be made. Raises PricingUnavailable when none is left or the
        deadline has passed."""
        if len(self.calls) >= self.max_calls:
            raise PricingUnavailable(f"{call} not made: the read's bound of {self.max_calls} calls is spent")
        if self._monotonic() >= self._deadline:
            raise PricingUnavailable(f"{call} not made: the read's deadline of {self.seconds:g}s has passed")
        self.calls.append(call)

    def remaining_s(self) -> float:
        """Seconds left before the deadline (0 once passed)."""
        return max(self._deadline - self._monotonic(), 0.0)


class Pricing(Protocol):
    """A cloud's own account of what it sells in a region and at what price."""

    @property
    def api_names(self) -> tuple[str, ...]:
        """The API calls a read makes, as the cloud names them (docs and permissions list them)."""
        ...

    def read_prices(
        self, region: str, *, budget: CallBudget, now: datetime, instance_types: Sequence[str] = ()
    ) -> LivePrices:
        """The region's GPU instance types, the zones that offer each, On-Demand and Spot prices
        in USD per hour, stamped `now`, each table naming the API it came from. A cloud that
        prices one type per call prices `instance_types` (the catalog's) first, in that order.

        Spends `budget` before every call and makes no call it refuses. A call that fails or
        is refused leaves its part empty and is named in `problems` (the catalog stands in for
        it); what other calls learned is still returned. Raises PricingUnavailable when nothing
        was learned at all."""
        ...
