"""The relay authentication a function's deployment configured, read from its environment.

Role: ``RelayAuthReader(platform=..., load_secret=...)`` turns the environment into a
``gpupool.core.intake.caller.RelayAuth`` on every HTTP call (``read(environ)``):
  GPUPOOL_HTTP_AUTH — ``hmac`` | ``aws-iam`` | ``fc-signature`` [hmac]. A platform mode is taken
      only by the flavour whose platform implements it (``aws-iam`` on Lambda, ``fc-signature``
      on Function Compute); another value refuses every call.
  hmac: GPUPOOL_RELAY_HMAC_SECRET_ID — the secret's id in the cloud's encrypted store (Secrets
      Manager on AWS, KMS on Alibaba Cloud; read with ``load_secret``): what a deployment uses;
      else GPUPOOL_RELAY_HMAC_SECRET — the value itself, for local runs (``gpupool invoke``,
      the sandbox). Neither: every call is refused.
  aws-iam: GPUPOOL_RELAY_PRINCIPAL — the IAM role (or user) ARN the relay calls as; unset:
      every call is refused.
A secret read from a store is kept for ``SECRET_TTL_SECONDS`` (a rotated secret is picked up
within it); a store that cannot be read raises ``RelayAuthUnavailable`` (the handler answers
503 and changes nothing) and is tried again on the next call.

Must not: log or show a secret, import an SDK (``load_secret`` imports one on first use), or
decide whether a request passes (``caller.request_problem`` does).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from gpupool.core.intake.caller import AUTH_MODES, AuthMode, RelayAuth

__all__ = [
    "HMAC_SECRET_ID_VARIABLE",
    "HMAC_SECRET_VARIABLE",
    "HTTP_AUTH_VARIABLE",
    "RELAY_PRINCIPAL_VARIABLE",
    "SECRET_TTL_SECONDS",
    "RelayAuthReader",
    "RelayAuthUnavailable",
]

HTTP_AUTH_VARIABLE = "GPUPOOL_HTTP_AUTH"
HMAC_SECRET_VARIABLE = "GPUPOOL_RELAY_HMAC_SECRET"
HMAC_SECRET_ID_VARIABLE = "GPUPOOL_RELAY_HMAC_SECRET_ID"
RELAY_PRINCIPAL_VARIABLE = "GPUPOOL_RELAY_PRINCIPAL"
SECRET_TTL_SECONDS = 300.0


class RelayAuthUnavailable(RuntimeError):
    """The relay's secret could not be read now (its store is unreachable or refuses)."""


class RelayAuthReader:
    """Reads one flavour's relay authentication from the environment, a stored secret cached."""

    def __init__(
        self,
        *,
        platform: AuthMode,
        load_secret: Callable[[str], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if platform == "hmac":
            raise ValueError("a flavour's platform mode is aws-iam or fc-signature")
        self._platform, self._load, self._clock = platform, load_secret, clock
        self._lock = threading.Lock()
        self._cached: tuple[str, bytes, float] | None = None  # (secret id, value, read at)

    def read(self, environ: Mapping[str, str]) -> RelayAuth:
        raw = (environ.get(HTTP_AUTH_VARIABLE) or "").strip()
        mode = raw or "hmac"
        if mode not in AUTH_MODES:
            return RelayAuth.refusing(f"{HTTP_AUTH_VARIABLE}={raw!r} is not one of {', '.join(AUTH_MODES)}")
        if mode not in ("hmac", self._platform):
            return RelayAuth.refusing(
                f"{HTTP_AUTH_VARIABLE}={mode} is not this platform's ({self._platform})"
            )
        if mode == "aws-iam":
            principal = (environ.get(RELAY_PRINCIPAL_VARIABLE) or "").strip() or None
            return RelayAuth(mode="aws-iam", principal=principal)
        if mode == "fc-signature":
            return RelayAuth(mode="fc-signature")
        secret_id = (environ.get(HMAC_SECRET_ID_VARIABLE) or "").strip()
        if secret_id:
            return RelayAuth(mode="hmac", hmac_secret=self._stored(secret_id))
        return RelayAuth(mode="hmac", hmac_secret=(environ.get(HMAC_SECRET_VARIABLE) or "").encode("utf-8"))

    def _stored(self, secret_id: str) -> bytes:
        with self._lock:
            cached = self._cached
            if (
                cached is not None
                and cached[0] == secret_id
                and self._clock() - cached[2] < SECRET_TTL_SECONDS
            ):
                return cached[1]
            try:
                value = self._load(secret_id).strip().encode("utf-8")
            except Exception as error:  # the store's SecretUnavailable, or whatever its SDK raised
                raise RelayAuthUnavailable(f"{HMAC_SECRET_ID_VARIABLE}={secret_id}: {error}") from None
            if not value:
                raise RelayAuthUnavailable(f"{HMAC_SECRET_ID_VARIABLE}={secret_id}: the secret is empty")
            self._cached = (secret_id, value, self._clock())
            return value
