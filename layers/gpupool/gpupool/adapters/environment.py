"""What every cloud's wiring reads the same way: settings, durations, URLs, the lazy ports.

Role: `ConfigError` (a bad or missing variable, named in the message) and `SecretUnavailable`
(a secret its store would not give), `cluster_name` and `read_settings` (GPUPOOL_CLUSTER_NAME and
the policy knobs GPUPOOL_LAUNCH_TIMEOUT … GPUPOOL_MAX_LAUNCH_ROUNDS), `parse_duration` (`90s`,
`5m`, `1h30m` or plain seconds), `url_variable` (an endpoint override that must be a URL),
`UtcClock` (the Clock port on the system clock), `Lazy` (a port built on first use, once, thread
safe), `LazyOfferings` (a cloud's catalog offerings of a region, read on first use),
`PriceReading` / `read_price_reading` (GPUPOOL_PRICES and GPUPOOL_PRICE_TTL) and `live_offerings`
(a cloud's offerings priced live over its catalog, `service.live_offerings`). Each
cloud's `wiring` module (`gpupool.adapters.<cloud>.wiring`) builds on these.

Must not: name a cloud's variables or API, import an SDK or the Kubernetes client, or read
`os.environ` (the caller passes the mapping).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from gpupool.service.deps import Settings

if TYPE_CHECKING:
    from gpupool.core.model.cloud import Cloud
    from gpupool.core.planning.plan import OfferingRef
    from gpupool.service.live_offerings import LiveOfferings
    from gpupool.service.ports import Clock
    from gpupool.service.pricing_ports import Pricing

__all__ = [
    "ConfigError",
    "Lazy",
    "LazyOfferings",
    "PriceReading",
    "SecretUnavailable",
    "UtcClock",
    "cluster_name",
    "duration_seconds",
    "live_offerings",
    "parse_duration",
    "read_price_reading",
    "read_settings",
    "url_variable",
]

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
# Settings fields read from GPUPOOL_<FIELD NAME IN CAPITALS>.
_DURATION_SETTINGS = (
    "launch_timeout",
    "registration_timeout",
    "offering_unavailable_for",
    "orphan_grace",
    "failed_claim_retention",
    "new_node_protection",
    "lease_duration",
)
_INT_SETTINGS = ("max_nodes_per_plan", "max_launch_rounds")

T = TypeVar("T")


class ConfigError(ValueError):
    """An environment variable is missing or malformed; the message names it."""


class SecretUnavailable(RuntimeError):
    """A secret could not be read from its store; the message names it (never its value)."""


class UtcClock:
    """The Clock port on the system clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def parse_duration(name: str, text: str) -> timedelta:
    """`90s`, `5m`, `1h30m` or plain seconds; ConfigError naming `name` otherwise."""
    value = text.strip()
    if value.isdigit():
        return timedelta(seconds=int(value))
    match = _DURATION.match(value)
    if not value or match is None:
        raise ConfigError(f"{name}={text!r} is not a duration (e.g. 90s, 5m, 1h30m)")
    hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return timedelta(hours=hours, minutes=minutes, seconds=seconds)


def duration_seconds(environ: Mapping[str, str], name: str, default: str) -> float:
    """Variable `name` as a duration in seconds (`default` when unset or empty)."""
    return parse_duration(name, environ.get(name) or default).total_seconds()


def _positive_int(name: str, text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise ConfigError(f"{name}={text!r} must be a whole number of at least 1")
    return int(text)


def cluster_name(environ: Mapping[str, str]) -> str:
    """GPUPOOL_CLUSTER_NAME, required."""
    cluster = environ.get("GPUPOOL_CLUSTER_NAME", "").strip()
    if not cluster:
        raise ConfigError(
            "GPUPOOL_CLUSTER_NAME is required (the TensorFusion cluster these functions manage)"
        )
    return cluster


def read_settings(environ: Mapping[str, str], cluster: str, region: str) -> Settings:
    """The service's Settings: `cluster`, `region` and the policy knobs set in `environ`."""
    values: dict[str, Any] = {"cluster_name": cluster, "region": region}
    for name in _DURATION_SETTINGS + _INT_SETTINGS:
        variable = f"GPUPOOL_{name.upper()}"
        text = environ.get(variable)
        if text is None or text == "":
            continue
        values[name] = (
            parse_duration(variable, text) if name in _DURATION_SETTINGS else _positive_int(variable, text)
        )
    try:
        return Settings(**values)
    except ValueError as error:
        raise ConfigError(str(error)) from error


def url_variable(environ: Mapping[str, str], variable: str) -> str | None:
    """An endpoint override: None when unset, else it must be an http(s) URL (ConfigError)."""
    endpoint = (environ.get(variable) or "").strip() or None
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise ConfigError(f"{variable}={endpoint!r} must be a URL (http:// or https://)")
    return endpoint


class Lazy(Generic[T]):
    """Builds the real object on first attribute access (once, thread-safe) and forwards to it."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._target: T | None = None
        self._lock = threading.Lock()

    def resolve(self) -> T:
        if self._target is None:
            with self._lock:
                if self._target is None:
                    self._target = self._factory()
        return self._target

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)


def catalog_offerings(cloud: Cloud, region: str) -> tuple[OfferingRef, ...]:
    """Every priced offering of `cloud` in `region` from the bundled catalog, as launch reads them."""
    from gpupool.core.planning.offerings import catalog_offerings as offerings_of

    return offerings_of(cloud, region)


class LazyOfferings(Sequence["OfferingRef"]):
    """A cloud's catalog offerings of a region, read on first use: launch and AutoSelect read
    them, while bind and compaction never do and need not pay for the catalog at their first
    invocation."""

    def __init__(self, cloud: Cloud, region: str) -> None:
        self._offerings = Lazy(lambda: catalog_offerings(cloud, region))

    @overload
    def __getitem__(self, index: int) -> OfferingRef: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[OfferingRef]: ...

    def __getitem__(self, index: int | slice) -> OfferingRef | Sequence[OfferingRef]:
        return self._offerings.resolve()[index]

    def __len__(self) -> int:
        return len(self._offerings.resolve())


@dataclass(frozen=True)
class PriceReading:
    """Where offerings and prices come from: `live` (the cloud's APIs over the catalog, read
    again after `ttl`) or `catalog` (the shipped catalog alone)."""

    mode: Literal["live", "catalog"] = "catalog"
    ttl: timedelta = timedelta(hours=1)


def read_price_reading(environ: Mapping[str, str]) -> PriceReading:
    """GPUPOOL_PRICES (live | catalog, default catalog) and GPUPOOL_PRICE_TTL (default 1h)."""
    mode = (environ.get("GPUPOOL_PRICES") or "catalog").strip()
    if mode not in ("live", "catalog"):
        raise ConfigError(f"GPUPOOL_PRICES={mode!r} is not one of: live, catalog")
    ttl = parse_duration("GPUPOOL_PRICE_TTL", environ.get("GPUPOOL_PRICE_TTL") or "1h")
    if ttl <= timedelta(0):
        raise ConfigError("GPUPOOL_PRICE_TTL must be longer than 0s")
    return PriceReading("live" if mode == "live" else "catalog", ttl)


def live_offerings(
    cloud: Cloud, region: str, pricing: Callable[[], Pricing], *, clock: Clock, ttl: timedelta
) -> LiveOfferings:
    """`cloud`'s offerings in `region` priced live over its bundled catalog (the container's
    cache; the other bounds are `service.live_offerings.PriceBounds`' defaults)."""
    from gpupool.core.catalog import load_catalog
    from gpupool.service.live_offerings import LiveOfferings, PriceBounds

    bounds = PriceBounds(ttl=ttl)
    return LiveOfferings(lambda: load_catalog(cloud), region, pricing, clock=clock, bounds=bounds)
