"""The body shared by every function handler, on both clouds (Lambda and Function Compute).

Role: given what the cloud's own intake made of the event (``gpupool.core.intake.envelope.Intake``:
the cause, the trigger kind and, for an HTTP call — the Lambda Function URL, the FC HTTP
trigger — the request with its body decoded once), call the function's service entry point
with deps built once per cold start and map the outcome. Retryable → raise (the platform
retries, then its failure destination takes over); permanent → logged and acknowledged; over
HTTP → 200 / 400 (unreadable or misrouted event, nothing changed) / 401 (a caller the
deployment does not trust, nothing changed) / 503 (retry later). ``build_handler(function,
deps_factory, read_event=..., relay_auth=..., ...)`` binds it to one cloud's intake and relay
authentication; ``gpupool.handlers.aws_lambda`` and ``gpupool.handlers.fc`` are those, each with
``make_handler(function, deps_factory, ...)``. The service entry points are found through
``SERVICE_ENTRIES``, one small loader per function that imports its service module the first
time a real event needs it (so a cold start imports no service, and the layer build finds the
modules by reading the imports).

HTTP calls fail closed, in this order, each refusal changing nothing:
1. authentication (``gpupool.core.intake.caller.request_problem`` on what
   ``gpupool.handlers.relay_auth`` read from the environment: the relay's HMAC signature, or a
   platform that authenticated the caller — Function URL AWS_IAM, FC ``authType: function``):
   a deployment that configured none refuses every call (401); a secret store that cannot be
   read is a 503; neither deps nor the service are touched;
2. once only (``gpupool.service.deliveries.DeliveryOnce`` on ``Deps.deliveries``): a replayed
   delivery — the same CloudEvent id, already acted on — is acknowledged (200, status
   ``duplicate``) and not acted on again; one another invocation is acting on is a 503; a
   delivery that failed retryably drops its record so the sender's retry is acted on. Deps
   without a ledger refuse relay calls (503). A dry run records nothing.

Must not: decide anything, tell what kind of event it got (intake does), talk to a cloud or
Kubernetes itself, import an SDK or a service at module import, or log a secret or a
request's headers.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from gpupool.core.intake.caller import RelayAuth, request_problem
from gpupool.core.intake.causes import Cause, Ignored
from gpupool.core.intake.envelope import HttpRequest, Intake
from gpupool.core.intake.routing import FUNCTIONS, FunctionName
from gpupool.handlers.relay_auth import RelayAuthUnavailable

if TYPE_CHECKING:
    from gpupool.service.deliveries import DeliveryLedger
    from gpupool.service.deps import Deps
    from gpupool.service.outcome import Outcome

__all__ = [
    "PRUNE_EVERY_SECONDS",
    "SERVICE_ENTRIES",
    "Handler",
    "ReadEvent",
    "RetryableFailure",
    "ServiceEntry",
    "build_handler",
    "http_response",
    "logger",
    "metrics",
]

# How often one warm handler deletes expired delivery records (an optimisation only: the
# records themselves are the state, and any invocation may prune them).
PRUNE_EVERY_SECONDS = 60.0

# Named "gpupool" on purpose: the service's stdlib logger "gpupool.service" is its child, so
# the service's records go through this JSON handler with the same per-event keys.
logger = Logger(service="gpupool")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "gpupool")
metrics = Metrics(namespace=NAMESPACE)

# What a platform calls: (event, context) → the response.
Handler = Callable[[Any, Any], dict[str, Any]]
# A cloud's intake: (event, function) → what the event is.
ReadEvent = Callable[[Any, FunctionName], Intake]


class ServiceEntry(Protocol):
    def __call__(self, cause: Cause, deps: Deps, /, *, dry_run: bool = False) -> Outcome: ...


class RetryableFailure(RuntimeError):
    """Raised so the platform retries the event (then its failure destination takes it)."""


def _launch() -> ServiceEntry:
    from gpupool.service.launch import handle_launch

    return handle_launch


def _bind() -> ServiceEntry:
    from gpupool.service.bind import handle_bind

    return handle_bind


def _compact() -> ServiceEntry:
    from gpupool.service.compact import handle_compact

    return handle_compact


# Each function's service entry point, imported on first use (never at a cold start's import).
SERVICE_ENTRIES: Mapping[FunctionName, Callable[[], ServiceEntry]] = MappingProxyType(
    {"launch": _launch, "bind": _bind, "compact": _compact}
)


def http_response(status: int, body: Mapping[str, object]) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if status == 503:
        headers["retry-after"] = "5"
    return {"statusCode": status, "headers": headers, "body": json.dumps(body, default=str)}


def build_handler(
    function: FunctionName,
    deps_factory: Callable[[], Deps],
    *,
    read_event: ReadEvent,
    relay_auth: Callable[[], RelayAuth],
    service: Callable[[], ServiceEntry] | None = None,
    dry_run: bool = False,
    request_id: Callable[[Any], object] = lambda context: getattr(context, "aws_request_id", None),
) -> Handler:
    """A handler reading events with ``read_event`` and trusting the HTTP callers ``relay_auth()``
    says (asked on every HTTP call), whose deps come from ``deps_factory`` (called once, on first
    need) and whose service is ``service`` (default: the function's own)."""
    if function not in FUNCTIONS:
        raise ValueError(f"unknown function {function!r}; expected one of {', '.join(FUNCTIONS)}")
    load_service = service or SERVICE_ENTRIES[function]
    built: dict[str, Any] = {}

    def deps() -> Deps:
        if "deps" not in built:  # a failed build is not cached: the next event tries again
            built["deps"] = deps_factory()
        result: Deps = built["deps"]
        return result

    def entry() -> ServiceEntry:
        if "service" not in built:
            built["service"] = load_service()
        result: ServiceEntry = built["service"]
        return result

    def prune_due() -> bool:
        last = built.get("pruned_at")
        if last is not None and time.monotonic() - last < PRUNE_EVERY_SECONDS:
            return False
        built["pruned_at"] = time.monotonic()
        return True

    def handler(event: Any, context: Any) -> dict[str, Any]:
        intake = read_event(event, function)
        cause, request = intake.cause, intake.request
        # The fixed keys (pool, claim, node, instance_id, event_id) this cause fills; the
        # service adds `action` to each action it logs.
        keys = {"function": function, **cause.log_keys()}
        with logger.append_context_keys(**keys, request_id=request_id(context)):
            try:
                if request is None:
                    return _handle(function, cause, http=False, deps=deps, entry=entry, dry_run=dry_run)
                refused = _refusal(function, request, relay_auth)
                if refused is not None:
                    return refused
                if isinstance(cause, Ignored) or dry_run:  # nothing will act: nothing to record
                    return _handle(function, cause, http=True, deps=deps, entry=entry, dry_run=dry_run)
                return _once(function, cause, deps=deps, entry=entry, prune_due=prune_due)
            finally:
                # Per flush, not as a default dimension: Powertools' metric store is per process.
                metrics.add_dimension(name="function", value=function)
                metrics.flush_metrics(raise_on_empty_metrics=False)

    return handler


def _refusal(
    function: FunctionName, request: HttpRequest, relay_auth: Callable[[], RelayAuth]
) -> dict[str, Any] | None:
    """The answer to an HTTP call the deployment must not act on (401, or 503 when the relay's
    secret cannot be read now), or None when the caller is trusted."""
    try:
        auth = relay_auth()
    except RelayAuthUnavailable as error:
        logger.error("relay authentication unavailable", extra={"reason": str(error)})
        metrics.add_metric(name="RelayAuthUnavailable", unit=MetricUnit.Count, value=1)
        reason = "the relay's authentication cannot be checked now; retry later"
        return http_response(503, {"function": function, "status": "retry", "errors": [reason]})
    problem = request_problem(auth, request, now=time.time())
    if problem is None:
        return None
    logger.warning("relay call refused", extra={"reason": problem})
    metrics.add_metric(name="UnauthorizedCalls", unit=MetricUnit.Count, value=1)
    return http_response(
        401, {"function": function, "status": "refused", "error": problem, "errors": [problem]}
    )


def _quietly(step: Callable[[], None], what: str) -> None:
    """A ledger write after the decision: its failure is logged, never turned into a retry."""
    try:
        step()
    except Exception as error:
        logger.warning(f"delivery record not {what}", extra={"error": str(error)})


def _prune(ledger: DeliveryLedger, deps: Deps) -> None:
    deleted = ledger.prune(now=deps.clock.now())
    if deleted:
        logger.info("expired delivery records deleted", extra={"count": deleted})


def _once(
    function: FunctionName,
    cause: Cause,
    *,
    deps: Callable[[], Deps],
    entry: Callable[[], ServiceEntry],
    prune_due: Callable[[], bool],
) -> dict[str, Any]:
    """An authenticated relay delivery, acted on at most once per CloudEvent id."""
    from gpupool.service.deliveries import DeliveryOnce  # the service loads lazily

    summary: dict[str, Any] = {"function": function, "cause": cause.model_dump(mode="json")}
    current = deps()
    ledger = current.deliveries
    if ledger is None or not cause.event_id:
        reason = (
            "these deps keep no delivery ledger: a replay could not be told"
            if ledger is None
            else "a relay delivery names its CloudEvent id"
        )
        logger.error("relay call not handled", extra={"reason": reason})
        metrics.add_metric(name="RelayCallsNotHandled", unit=MetricUnit.Count, value=1)
        return http_response(
            503 if ledger is None else 400, {**summary, "status": "refused", "errors": [reason]}
        )
    once = DeliveryOnce(
        ledger, function=function, event_id=cause.event_id, now=current.clock.now, holder=current.holder
    )
    try:
        state = once.begin()
    except Exception as error:
        logger.warning("delivery ledger unavailable; asking for a retry", extra={"error": str(error)})
        metrics.add_metric(name="RetryableFailures", unit=MetricUnit.Count, value=1)
        return http_response(503, {**summary, "status": "retry", "errors": [f"delivery ledger: {error}"]})
    if state == "done":
        logger.info("replayed delivery acknowledged, not acted on")
        metrics.add_metric(name="DuplicateDeliveries", unit=MetricUnit.Count, value=1)
        return http_response(200, {**summary, "status": "duplicate"})
    if state == "in-progress":
        metrics.add_metric(name="DeliveriesInProgress", unit=MetricUnit.Count, value=1)
        reason = "another invocation is handling this delivery; retry later"
        return http_response(503, {**summary, "status": "retry", "errors": [reason]})
    try:
        response = _handle(function, cause, http=True, deps=deps, entry=entry, dry_run=False)
    except BaseException:
        _quietly(once.abandon, "released")
        raise
    if response["statusCode"] >= 500:
        _quietly(once.abandon, "released")
    else:
        _quietly(once.finish, "kept")
    if prune_due():
        _quietly(lambda: _prune(ledger, current), "pruned")
    return response


def _handle(
    function: FunctionName,
    cause: Cause,
    *,
    http: bool,
    deps: Callable[[], Deps],
    entry: Callable[[], ServiceEntry],
    dry_run: bool,
) -> dict[str, Any]:
    summary: dict[str, Any] = {"function": function, "cause": cause.model_dump(mode="json")}
    if isinstance(cause, Ignored):
        logger.info("event ignored", extra={"reason": cause.reason})
        metrics.add_metric(name="EventsIgnored", unit=MetricUnit.Count, value=1)
        if http:
            return http_response(400, {**summary, "status": "ignored", "error": cause.reason})
        return {**summary, "status": "ignored", "reason": cause.reason}
    metrics.add_metric(name=f"Cause_{cause.kind}", unit=MetricUnit.Count, value=1)
    began = time.perf_counter()
    try:
        outcome = entry()(cause, deps(), dry_run=dry_run)
    except Exception as error:
        if getattr(error, "retryable", True) is False:
            # A permanent domain error: retrying cannot help, so acknowledge it and say why.
            logger.error("permanent failure", extra={"error": str(error)})
            metrics.add_metric(name="PermanentFailures", unit=MetricUnit.Count, value=1)
            body = {**summary, "status": "failed", "errors": [str(error)]}
            return http_response(200, body) if http else body
        logger.exception("retryable failure")
        metrics.add_metric(name="RetryableFailures", unit=MetricUnit.Count, value=1)
        if http:
            return http_response(503, {**summary, "status": "retry", "errors": [str(error)]})
        raise
    result = {**summary, "status": "handled", "dry_run": dry_run, **outcome.to_json()}
    metrics.add_metric(name="ActionsApplied", unit=MetricUnit.Count, value=len(outcome.applied))
    metrics.add_metric(name="ActionErrors", unit=MetricUnit.Count, value=len(outcome.errors))
    seconds = time.perf_counter() - began
    metrics.add_metric(name="DecisionLatency", unit=MetricUnit.Milliseconds, value=round(seconds * 1000, 3))
    from gpupool.service.outcome_metrics import outcome_metrics, pool_metrics  # the service loads lazily

    for name, value in outcome_metrics(outcome).items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    for pool, gauges in pool_metrics(outcome).items():
        # One blob per pool: EMF dimensions are per blob, and `pool` must not leak into the rest.
        per_pool = EphemeralMetrics(namespace=NAMESPACE)
        per_pool.add_dimension(name="function", value=function)
        per_pool.add_dimension(name="pool", value=pool)
        for gauge in gauges:
            per_pool.add_metric(name=gauge.name, unit=MetricUnit(gauge.unit), value=gauge.value)
        per_pool.flush_metrics()
    if outcome.retryable:
        logger.warning("retryable errors; asking for a retry", extra={"errors": outcome.errors})
        metrics.add_metric(name="RetryableFailures", unit=MetricUnit.Count, value=1)
        if http:
            return http_response(503, {**result, "status": "retry"})
        raise RetryableFailure("; ".join(outcome.errors) or f"{function}: retryable failure")
    if outcome.errors:
        logger.error("permanent errors acknowledged", extra={"errors": outcome.errors})
    else:
        logger.info("handled", extra={"actions": len(outcome.plan.actions), "applied": len(outcome.applied)})
    return http_response(200, result) if http else result
