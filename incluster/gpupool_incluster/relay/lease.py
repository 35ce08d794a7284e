"""Leader election over a `coordination.k8s.io/v1` Lease, with client-go's rules and defaults.

Role: `LeaderElector.run()` tries every `retry_period` to take or renew the Lease: it takes it when
nobody holds it, when it is its own, or when the holder's record has not changed for
`lease_duration` as observed on this replica's own clock (never the holder's timestamps, so
clock skew does not matter); every write carries the resourceVersion it read, so two candidates
cannot both win. A leader that fails to renew for `renew_deadline` steps down. `on_started` /
`on_stopped` are called on each change. `stop(release=True)` empties the holder so another replica
takes over at its next retry; `abandon()` stops without releasing (what a crash looks like).
Defaults (15 s lease, 10 s renew deadline, 2 s retry) are client-go's.

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

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("lease timings need 0 < retry period < renew deadline < lease duration")


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
    ) -> None:
        self.coordination = client.CoordinationV1Api(api)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.on_started, self.on_stopped = on_started, on_stopped
        self.timings = timings or LeaseTimings()
        self.leading = threading.Event()
        self._stop = threading.Event()
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._thread: threading.Thread | None = None

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="lease", daemon=True)
        self._thread.start()

    def stop(self, *, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timings.retry_period + 5)
        if self.leading.is_set():
            self._step_down()
            if release:
                self._release()

    def abandon(self) -> None:
        """Stop without releasing the Lease: the others wait for it to expire."""
        self.stop(release=False)

    def run(self) -> None:
        while not self._stop.is_set():
            won = self._try()
            now = time.monotonic()
            if won:
                self._last_renew = now
                if not self.leading.is_set():
                    log.info("%s now holds lease %s/%s", self.identity, self.namespace, self.name)
                    self.on_started()
                    self.leading.set()
            elif self.leading.is_set() and now - self._last_renew >= self.timings.renew_deadline:
                log.warning(
                    "%s could not renew lease %s for %.0f s; stepping down",
                    self.identity,
                    self.name,
                    self.timings.renew_deadline,
                )
                self._step_down()
            self._stop.wait(self.timings.retry_period)

    def _step_down(self) -> None:
        self.leading.clear()
        self.on_stopped()

    # ---- the Lease -------------------------------------------------------------------------------
    def _read(self) -> dict[str, Any] | None:
        try:
            response = self.coordination.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False
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
        except Exception as exc:  # the API server unreachable: keep trying
            log.warning("lease %s/%s: %s", self.namespace, self.name, type(exc).__name__)
            return False

    def _try_once(self) -> bool:
        now, stamp = time.monotonic(), _micro_time()
        lease = self._read()
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
            self.coordination.create_namespaced_lease(self.namespace, body, _preload_content=False)
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
        lease["spec"] = spec | mine
        self.coordination.replace_namespaced_lease(self.name, self.namespace, lease, _preload_content=False)
        self._observed, self._observed_at = (self.identity, stamp), now
        return True

    def _release(self) -> None:
        try:
            lease = self._read()
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"] = (lease.get("spec") or {}) | {"holderIdentity": "", "leaseDurationSeconds": 1}
            self.coordination.replace_namespaced_lease(
                self.name, self.namespace, lease, _preload_content=False
            )
        except Exception as exc:  # best effort: the Lease expires anyway
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, type(exc).__name__)
