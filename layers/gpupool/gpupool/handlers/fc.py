"""The Function Compute (3.0, Python) flavour of the shared handler body (launch, bind, compact).

Role: FC calls ``handler(event, context)`` with ``event`` as **bytes**; this parses it with
``intake_alibaba`` (EventBridge ECS CloudEvents, FC timer triggers, FC HTTP-trigger requests
carrying the relay's CloudEvents) and hands it to ``gpupool.handlers.common``: retryable →
raise (FC's asynchronous invocation retries, then its on-failure destination takes over);
permanent → logged and acknowledged; HTTP trigger → 200 / 400 / 401 (HMAC, when
GPUPOOL_RELAY_HMAC_SECRET is set) / 503. The function role's STS credentials in
``context.credentials`` are kept fresh for the ECS client on every invocation.
``functions/<name>/index.py`` binds it to one function: ``handler = make_handler("launch")``.

Must not: decide anything, talk to Alibaba Cloud or Kubernetes itself, or import the ECS SDK
or kubernetes at module import (``gpupool.adapters.wiring_alibaba`` is imported when the
first real event needs deps).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gpupool.core.intake.alibaba import intake_alibaba
from gpupool.core.intake.causes import Cause
from gpupool.core.intake.routing import FunctionName, as_json_object
from gpupool.handlers import common
from gpupool.handlers.common import Handler, RetryableFailure, ServiceEntry

if TYPE_CHECKING:
    from gpupool.adapters.ecs_api import EcsCredentials
    from gpupool.service.deps import Deps

__all__ = ["Handler", "RetryableFailure", "ServiceEntry", "alibaba_deps", "make_handler"]


class _LatestContext:
    """The context of the invocation being handled (FC refreshes its STS credentials)."""

    context: Any = None


_latest = _LatestContext()


def _context_credentials() -> EcsCredentials | None:
    from gpupool.adapters.ecs_credentials import from_fc_context

    return from_fc_context(_latest.context)


def alibaba_deps() -> Deps:
    """Deps for the real cloud, from the function's environment (imports the ECS SDK / kubernetes lazily)."""
    from gpupool.adapters.wiring_alibaba import build_alibaba_deps

    return build_alibaba_deps(os.environ, credentials=_context_credentials)


def _intake(event: Any, function: FunctionName) -> tuple[Cause, Mapping[str, Any] | None]:
    body = as_json_object(event)
    is_http = body is not None and ("rawPath" in body or "requestContext" in body)
    return intake_alibaba(body if body is not None else event, function=function), body if is_http else None


def _request_id(context: Any) -> object:
    return getattr(context, "request_id", None) or getattr(context, "requestId", None)


def make_handler(
    function: FunctionName,
    deps_factory: Callable[[], Deps] = alibaba_deps,
    *,
    service: Callable[[], ServiceEntry] | None = None,
    dry_run: bool = False,
) -> Handler:
    """An FC handler whose deps come from ``deps_factory`` (called once, on first need).

    Tests and ``gpupool invoke --cloud alibaba`` pass fakes or sandbox-backed deps here.
    """
    inner = common.make_handler(
        function, deps_factory, intake=_intake, service=service, dry_run=dry_run, request_id=_request_id
    )

    def handler(event: Any, context: Any) -> dict[str, Any]:
        _latest.context = context
        return inner(event, context)

    return handler
