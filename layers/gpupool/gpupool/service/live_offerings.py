"""Live offerings: a cloud's prices read at most once per TTL per function container, the catalog as fallback.

Role: `PriceCache` (one per container: `PRICE_CACHE`, module-level, so warm invocations share
what one read; keyed by cloud and region), `PriceBounds` (the TTL, the calls and seconds one read
may take, how soon a failed read is tried again), and `LiveOfferings`, the `Deps.offerings` of a
cloud that has a `Pricing` port: its `for_invocation()` is what one invocation decides from —
resolved on first use (bind and compaction never read prices), once, so no invocation reads
twice or makes more than `PriceBounds.max_calls` pricing calls. A read that fails (the port's
`PricingUnavailable`) keeps the last good read if there is one, else prices from the catalog;
either way the offerings' sources say why (`core.planning.priced_offerings`), and the failure
is retried after `retry_after`, not on every invocation.

Must not: import an SDK, choose prices (the core does), or read the clock except through `Clock`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, overload

from gpupool.core.catalog import Catalog
from gpupool.core.catalog.live import LivePrices
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.priced_offerings import select_offering_prices
from gpupool.service.pricing_ports import CallBudget, Pricing, PricingUnavailable

if TYPE_CHECKING:
    from gpupool.service.deps import Deps
    from gpupool.service.ports import Clock

__all__ = [
    "MAX_PRICING_CALLS",
    "PRICE_CACHE",
    "LiveOfferings",
    "PriceBounds",
    "PriceCache",
    "offerings_for_invocation",
]

# The most pricing API calls one invocation makes (every page of every call counts).
MAX_PRICING_CALLS = 16


@dataclass(frozen=True, kw_only=True)
class PriceBounds:
    """How often and how far a container reads live prices."""

    ttl: timedelta = timedelta(hours=1)
    max_calls: int = MAX_PRICING_CALLS
    deadline: timedelta = timedelta(seconds=8)
    retry_after: timedelta = timedelta(minutes=5)

    def __post_init__(self) -> None:
        if not 1 <= self.max_calls <= MAX_PRICING_CALLS:
            raise ValueError(f"max_calls must be between 1 and {MAX_PRICING_CALLS}")
        if min(self.ttl, self.deadline, self.retry_after) <= timedelta(0):
            raise ValueError("ttl, deadline and retry_after must be positive")


@dataclass(frozen=True)
class _Entry:
    live: LivePrices | None  # the last good read (None: never read well)
    offerings: tuple[OfferingRef, ...]
    tried_at: datetime
    failed: bool


class PriceCache:
    """What this container read, by (cloud, region); thread safe (one read at a time per key)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def offerings(
        self,
        key: tuple[str, str],
        *,
        now: datetime,
        bounds: PriceBounds,
        read: Callable[[LivePrices | None], tuple[LivePrices | None, tuple[OfferingRef, ...], bool]],
    ) -> tuple[OfferingRef, ...]:
        """The cached offerings of `key`, read again (`read(last good)` → (good read, offerings,
        failed)) when older than the TTL, or than `retry_after` after a failed read."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                fresh_for = bounds.retry_after if entry.failed else bounds.ttl
                if now - entry.tried_at < fresh_for:
                    return entry.offerings
            live, offerings, failed = read(entry.live if entry else None)
            self._entries[key] = _Entry(live, offerings, now, failed)
            return offerings


PRICE_CACHE = PriceCache()  # one per function container, shared by its warm invocations


class LiveOfferings(Sequence[OfferingRef]):
    """`Deps.offerings` priced live over `catalog` (see the module docstring). `pricing` builds
    the port on first use; as a Sequence it consults the cache on every access — an invocation
    reads through `for_invocation()` (`offerings_for_invocation`) instead, once."""

    def __init__(
        self,
        catalog: Callable[[], Catalog],
        region: str,
        pricing: Callable[[], Pricing],
        *,
        clock: Clock,
        cache: PriceCache = PRICE_CACHE,
        bounds: PriceBounds | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._catalog = catalog
        self._region = region
        self._pricing = pricing
        self._clock = clock
        self._cache = cache
        self._bounds = bounds or PriceBounds()
        self._monotonic = monotonic

    def current(self) -> tuple[OfferingRef, ...]:
        """The offerings now: cached, or read once more when the cache says so."""
        catalog = self._catalog()
        key = (catalog.cloud, self._region)
        return self._cache.offerings(key, now=self._clock.now(), bounds=self._bounds, read=self._read)

    def _read(self, last_good: LivePrices | None) -> tuple[LivePrices | None, tuple[OfferingRef, ...], bool]:
        catalog, bounds, now = self._catalog(), self._bounds, self._clock.now()
        budget = CallBudget(bounds.max_calls, bounds.deadline.total_seconds(), monotonic=self._monotonic)
        try:
            types = [kind.name for kind in catalog.instance_types]
            live = self._pricing().read_prices(self._region, budget=budget, now=now, instance_types=types)
        except PricingUnavailable as error:
            why = f"live prices unavailable: {error}"
            if last_good is not None:
                why += f"; live prices of {last_good.read_at:%Y-%m-%dT%H:%M:%SZ} kept"
            return last_good, select_offering_prices(catalog, self._region, last_good, fallback=why), True
        fallback = "; ".join(live.problems)
        fallback = f"not read live: {fallback}" if fallback else ""
        return live, select_offering_prices(catalog, self._region, live, fallback=fallback), False

    def for_invocation(self) -> Sequence[OfferingRef]:
        """What one invocation decides from: read on first use, then the same every time."""
        return _Once(self.current)

    @overload
    def __getitem__(self, index: int) -> OfferingRef: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[OfferingRef]: ...

    def __getitem__(self, index: int | slice) -> OfferingRef | Sequence[OfferingRef]:
        return self.current()[index]

    def __len__(self) -> int:
        return len(self.current())


class _Once(Sequence[OfferingRef]):
    """A sequence resolved on first use, once."""

    def __init__(self, resolve: Callable[[], tuple[OfferingRef, ...]]) -> None:
        self._resolve = resolve
        self._value: tuple[OfferingRef, ...] | None = None
        self._lock = threading.Lock()

    def _get(self) -> tuple[OfferingRef, ...]:
        with self._lock:
            if self._value is None:
                self._value = self._resolve()
            return self._value

    @overload
    def __getitem__(self, index: int) -> OfferingRef: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[OfferingRef]: ...

    def __getitem__(self, index: int | slice) -> OfferingRef | Sequence[OfferingRef]:
        return self._get()[index]

    def __len__(self) -> int:
        return len(self._get())


def offerings_for_invocation(deps: Deps) -> Deps:
    """`deps` whose offerings one invocation reads once (itself when they are not live)."""
    if isinstance(deps.offerings, LiveOfferings):
        return replace(deps, offerings=deps.offerings.for_invocation())
    return deps
