"""Leader election over a `coordination.k8s.io/v1` Lease, with client-go's rules and defaults.

Role: `LeaderElector.run()` tries every `retry_period` to take or renew the Lease (`round()`): it
takes it when nobody holds it, when it is its own, or when the holder's record has not changed for
`lease_duration` as observed on this replica's own clock (never the holder's timestamps, so
clock skew does not matter); every write carries the resourceVersion it read, so of two candidates
that read the same Lease only one can write it (the other gets 409 Conflict). A leader that has not
renewed for `renew_deadline` steps down — on time even while a Lease call hangs: every call carries
a client timeout (`call_timeout`, a quarter of the renew deadline, so a read and a write fit twice),
and a watchdog thread (`check_deadline()`) steps down at the deadline whatever the call is doing.
A renewal counts from the moment its round *began* (the server may have written it any time after),
and one that returns after the deadline does not make the replica leader again on its own; the next
round decides. Why this means no two leaders: another replica takes over only `lease_duration` after
it saw the record last change — after this replica's last write, so after the round that wrote it
began — while this replica stops `renew_deadline` (< `lease_duration`) after that same moment.
`on_started` / `on_stopped` are called on each change (never both at once). `stop(release=True)`
empties the holder so another replica takes over at its next retry; `abandon()` stops without
releasing (what a crash looks like). Defaults (15 s lease, 10 s renew deadline, 2 s retry) are
client-go's. `clock` (monotonic seconds) is injectable, so tests drive rounds and deadlines by hand.

Must not: forward anything itself, or trust another replica's clock.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as _client

__all__ = ["LeaderElector", "LeaseTimings"]

log = logging.getLogger("gpupool.relay.lease")
client: Any = _client


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    call_timeout: float = 0.0
    """Client timeout of each Lease call (connect and read); 0: a quarter of the renew deadline."""

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("lease timings need 0 < retry period < renew deadline < lease duration")
        if self.call_timeout < 0 or 2 * self.call_timeout >= self.renew_deadline:
            raise ValueError(
                "a Lease call's timeout must be under half the renew deadline (a read and a write)"
            )

    @property
    def request_timeout(self) -> float:
        return self.call_timeout or self.renew_deadline / 4


def _micro_time() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: Any,
        *,
        namespace: str,
        name: str,
        identity: str,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        timings: LeaseTimings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.coordination = client.CoordinationV1Api(api)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.on_started, self.on_stopped = on_started, on_stopped
        self.timings = timings or LeaseTimings()
        self.clock = clock
        self.leading = threading.Event()
        self._stop = threading.Event()
        self._transition = threading.Lock()  # leading / on_started / on_stopped change together
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._threads: list[threading.Thread] = []

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self._threads = [
            threading.Thread(target=self.run, name="lease", daemon=True),
            threading.Thread(target=self._watchdog, name="lease-watchdog", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self, *, release: bool = True) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timings.retry_period + 2 * self.timings.request_timeout + 1)
        with self._transition:
            was_leading = self.leading.is_set()
            if was_leading:
                self._step_down()
        if was_leading and release:
            self._release()

    def abandon(self) -> None:
        """Stop without releasing the Lease: the others wait for it to expire."""
        self.stop(release=False)

    def run(self) -> None:
        while not self._stop.is_set():
            self.round()
            self._stop.wait(self.timings.retry_period)

    def round(self) -> bool:
        """One attempt to take or renew the Lease; True when this replica leads after it."""
        began = self.clock()
        won = self._try()
        with self._transition:
            if won and not self._stop.is_set() and self.clock() - began < self.timings.renew_deadline:
                self._last_renew = max(self._last_renew, began)
                if not self.leading.is_set():
                    log.info("%s now holds lease %s/%s", self.identity, self.namespace, self.name)
                    self.on_started()  # under the transition lock: the watchdog waits for it
                    self.leading.set()
            self._check_deadline_locked()
            return self.leading.is_set()

    def check_deadline(self) -> bool:
        """Step down when the last renewal began `renew_deadline` ago or more; True when it did."""
        with self._transition:
            return self._check_deadline_locked()

    def _check_deadline_locked(self) -> bool:
        if not self.leading.is_set() or self.clock() - self._last_renew < self.timings.renew_deadline:
            return False
        log.warning(
            "%s could not renew lease %s for %.0f s; stepping down",
            self.identity,
            self.name,
            self.timings.renew_deadline,
        )
        self._step_down()
        return True

    def _watchdog(self) -> None:
        """Wakes at each renew deadline, so stepping down never waits for a hanging Lease call."""
        while not self._stop.is_set():
            with self._transition:
                due = self._last_renew + self.timings.renew_deadline - self.clock()
                leading = self.leading.is_set()
            pause = (
                self.timings.retry_period if not leading else max(0.01, min(due, self.timings.retry_period))
            )
            if self._stop.wait(pause):
                return
            self.check_deadline()

    def _step_down(self) -> None:
        self.on_stopped()  # first: once `leading` is clear, nothing forwards any more
        self.leading.clear()

    # ---- the Lease -------------------------------------------------------------------------------
    def _read(self) -> dict[str, Any] | None:
        try:
            response = self.coordination.read_namespaced_lease(
                self.name,
                self.namespace,
                _preload_content=False,
                _request_timeout=self.timings.request_timeout,
            )
        except client.exceptions.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        lease: dict[str, Any] = json.loads(response.data)
        return lease

    def _try(self) -> bool:
        try:
            return self._try_once()
        except client.exceptions.ApiException as exc:
            if exc.status != 409:
                log.warning("lease %s/%s: HTTP %s", self.namespace, self.name, exc.status)
            return False
        except Exception as exc:  # the API server unreachable or too slow: keep trying
            log.warning("lease %s/%s: %s", self.namespace, self.name, type(exc).__name__)
            return False

    def _try_once(self) -> bool:
        stamp = _micro_time()
        lease = self._read()
        now = self.clock()  # after the read: an observer counts from the latest moment it could have seen
        mine = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.timings.lease_duration),
            "renewTime": stamp,
        }
        if lease is None:
            body = {
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": mine | {"acquireTime": stamp, "leaseTransitions": 0},
            }
            self.coordination.create_namespaced_lease(
                self.namespace, body, _preload_content=False, _request_timeout=self.timings.request_timeout
            )
            return True
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        if holder and holder != self.identity and now - self._observed_at < self.timings.lease_duration:
            return False
        if holder != self.identity:
            mine |= {"acquireTime": stamp, "leaseTransitions": int(spec.get("leaseTransitions") or 0) + 1}
        lease["spec"] = spec | mine  # metadata.resourceVersion stays: the write is conditional on it
        self.coordination.replace_namespaced_lease(
            self.name,
            self.namespace,
            lease,
            _preload_content=False,
            _request_timeout=self.timings.request_timeout,
        )
        self._observed, self._observed_at = (self.identity, stamp), now
        return True

    def _release(self) -> None:
        try:
            lease = self._read()
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"] = (lease.get("spec") or {}) | {"holderIdentity": "", "leaseDurationSeconds": 1}
            self.coordination.replace_namespaced_lease(
                self.name,
                self.namespace,
                lease,
                _preload_content=False,
                _request_timeout=self.timings.request_timeout,
            )
        except Exception as exc:  # best effort: the Lease expires anyway
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, type(exc).__name__)
