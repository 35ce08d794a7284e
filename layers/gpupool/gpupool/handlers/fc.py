"""The Function Compute (3.0, Python) flavour of the shared handler body (launch, bind, compact).

Role: FC calls ``handler(event, context)`` with ``event`` as **bytes**; this reads it with
``intake_alibaba`` (EventBridge ECS CloudEvents, FC timer triggers, FC HTTP-trigger requests
carrying the relay's CloudEvents — intake tells which, and decodes a request's body) and hands
it to ``gpupool.handlers.common``: retryable →
raise (FC's asynchronous invocation retries, then its on-failure destination takes over);
permanent → logged and acknowledged; HTTP trigger → 200 / 400 / 401 / 503. Relay calls are
trusted as ``gpupool.handlers.relay_auth`` reads the environment: ``fc-signature`` (the trigger's
``authType: function`` checked the relay's ACS3 signature; its x-acs-content-sha256 must match
the body) or
``hmac`` (the secret from KMS, GPUPOOL_RELAY_HMAC_SECRET_ID); nothing configured refuses every
call. The function role's STS credentials in ``context.credentials`` are kept fresh for the ECS
client (and KMS) on every invocation.
GPUPOOL_HTTP_ONLY=true (s.yaml's relay-facing functions, gpupool-<name>-relay, the only ones the
relay's RAM identity may invoke) makes the function take HTTP-trigger requests only: any other
event (timer, EventBridge, anything a direct InvokeFunction could carry) raises
``NotAnHttpTriggerRequest`` before intake's cause reaches anything, so a direct invocation cannot
go around the signature check and the replay ledger. A value other than ``true`` or ``false``
refuses every event (``HttpOnlyMisconfigured``).
``functions/<name>/index.py`` binds it to one function: ``make_handler = partial(make_handler,
"launch")``, ``handler = make_handler()``.

Must not: decide anything, talk to Alibaba Cloud or Kubernetes itself, or import the ECS SDK
or kubernetes at module import (``gpupool.adapters.alibaba.wiring`` is imported when the
first real event needs deps).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gpupool.core.intake.alibaba import intake_alibaba
from gpupool.core.intake.envelope import Intake
from gpupool.core.intake.routing import FunctionName
from gpupool.handlers.common import Handler, ServiceEntry, build_handler
from gpupool.handlers.relay_auth import RelayAuthReader

if TYPE_CHECKING:
    from gpupool.adapters.alibaba.api import EcsCredentials
    from gpupool.service.deps import Deps

__all__ = [
    "HTTP_ONLY_VARIABLE",
    "HttpOnlyMisconfigured",
    "NotAnHttpTriggerRequest",
    "alibaba_deps",
    "http_only",
    "make_handler",
]

HTTP_ONLY_VARIABLE = "GPUPOOL_HTTP_ONLY"


class NotAnHttpTriggerRequest(PermissionError):
    """An HTTP-only function was handed an event that is not an HTTP-trigger request."""


class HttpOnlyMisconfigured(ValueError):
    """GPUPOOL_HTTP_ONLY holds neither true nor false: every event is refused."""


def http_only(environ: Mapping[str, str]) -> bool:
    """Whether the deployment takes HTTP-trigger requests only (HttpOnlyMisconfigured on a value
    that is neither true nor false: a typo must not open the function to direct events)."""
    raw = (environ.get(HTTP_ONLY_VARIABLE) or "").strip()
    if raw.lower() in ("", "false"):
        return False
    if raw.lower() == "true":
        return True
    raise HttpOnlyMisconfigured(
        f"{HTTP_ONLY_VARIABLE}={raw!r} is neither true nor false: refusing every event"
    )


class _LatestContext:
    """The context of the invocation being handled (FC refreshes its STS credentials)."""

    context: Any = None


_latest = _LatestContext()


def _context_credentials() -> EcsCredentials | None:
    from gpupool.adapters.alibaba.credentials import from_fc_context

    return from_fc_context(_latest.context)


def alibaba_deps() -> Deps:
    """Deps for the real cloud, from the function's environment (imports the ECS SDK / kubernetes lazily)."""
    from gpupool.adapters.alibaba.wiring import build_alibaba_deps

    return build_alibaba_deps(os.environ, credentials=_context_credentials)


def _event_reader(settings: Mapping[str, str]) -> Callable[[Any, FunctionName], Intake]:
    """Intake, refusing what an HTTP-only function must not take (``settings`` read per event)."""

    def read_event(event: Any, function: FunctionName) -> Intake:
        only = http_only(settings)  # raises first: a misconfigured function reads nothing
        intake = intake_alibaba(event, function=function)
        if only and intake.trigger != "http":
            raise NotAnHttpTriggerRequest(
                f"{function}: this function takes HTTP-trigger requests only ({HTTP_ONLY_VARIABLE}=true) "
                f"and was handed a {intake.trigger} event: refused, nothing done (timer and EventBridge "
                "events go to the function without -relay)"
            )
        return intake

    return read_event


def _request_id(context: Any) -> object:
    return getattr(context, "request_id", None) or getattr(context, "requestId", None)


def make_handler(
    function: FunctionName,
    deps_factory: Callable[[], Deps] = alibaba_deps,
    *,
    service: Callable[[], ServiceEntry] | None = None,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Handler:
    """An FC handler whose deps come from ``deps_factory`` (called once, on first need) and whose
    relay authentication is read from ``environ`` (default: the process environment, read on
    every call).

    Tests and ``gpupool invoke --cloud alibaba`` pass fakes or sandbox-backed deps here.
    """
    settings = os.environ if environ is None else environ

    def secret(name: str) -> str:  # a KMS secret, with the invocation's STS credentials
        from gpupool.adapters.alibaba.wiring import alibaba_secret

        return alibaba_secret(settings, name, credentials=_context_credentials)

    reader = RelayAuthReader(platform="fc-signature", load_secret=secret)
    inner = build_handler(
        function,
        deps_factory,
        read_event=_event_reader(settings),
        relay_auth=lambda: reader.read(settings),
        service=service,
        dry_run=dry_run,
        request_id=_request_id,
    )

    def handler(event: Any, context: Any) -> dict[str, Any]:
        _latest.context = context
        return inner(event, context)

    return handler
