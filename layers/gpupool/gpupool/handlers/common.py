"""The body shared by every function handler, on both clouds (Lambda and Function Compute).

Role: given what the cloud's own intake made of the event (``gpupool.core.intake.envelope.Intake``:
the cause, the trigger kind and, for an HTTP call — the Lambda Function URL, the FC HTTP
trigger — the request with its body decoded once), call the function's service entry point
with deps built once per cold start and map the outcome. Retryable → raise (the platform
retries, then its failure destination takes over); permanent → logged and acknowledged; over
HTTP → 200 / 400 (unreadable or misrouted event, nothing changed) / 401 (unsigned or wrongly
signed relay call, nothing changed) / 503 (retry later). ``build_handler(function, deps_factory,
read_event=..., ...)`` binds it to one cloud's intake; ``gpupool.handlers.aws_lambda`` and
``gpupool.handlers.fc`` are those, each with ``make_handler(function, deps_factory, ...)``. The
service entry points are found through ``SERVICE_ENTRIES``, one small loader per function that
imports its service module the first time a real event needs it (so a cold start imports no
service, and the layer build finds the modules by reading the imports).

HMAC: when the environment variable GPUPOOL_RELAY_HMAC_SECRET is set, every HTTP request must
carry a valid ``gpupool.core.intake.signature`` signature over its exact body bytes, made within
five minutes; otherwise 401 and neither deps nor the service are touched.

Must not: decide anything, tell what kind of event it got (intake does), talk to a cloud or
Kubernetes itself, import an SDK or a service at module import, or log the secret or a
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

from gpupool.core.intake.causes import Cause, Ignored
from gpupool.core.intake.envelope import Intake
from gpupool.core.intake.routing import FUNCTIONS, FunctionName
from gpupool.core.intake.signature import request_signature_problem

if TYPE_CHECKING:
    from gpupool.service.deps import Deps
    from gpupool.service.outcome import Outcome

__all__ = [
    "HMAC_SECRET_VARIABLE",
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

HMAC_SECRET_VARIABLE = "GPUPOOL_RELAY_HMAC_SECRET"

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
    service: Callable[[], ServiceEntry] | None = None,
    dry_run: bool = False,
    request_id: Callable[[Any], object] = lambda context: getattr(context, "aws_request_id", None),
) -> Handler:
    """A handler reading events with ``read_event``, whose deps come from ``deps_factory``
    (called once, on first need) and whose service is ``service`` (default: the function's own)."""
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

    def handler(event: Any, context: Any) -> dict[str, Any]:
        intake = read_event(event, function)
        cause, request = intake.cause, intake.request
        # The fixed keys (pool, claim, node, instance_id, event_id) this cause fills; the
        # service adds `action` to each action it logs.
        keys = {"function": function, **cause.log_keys()}
        with logger.append_context_keys(**keys, request_id=request_id(context)):
            try:
                secret = os.environ.get(HMAC_SECRET_VARIABLE)
                if request is not None and secret:
                    problem = request_signature_problem(secret.encode("utf-8"), request, now=time.time())
                    if problem is not None:
                        logger.warning("relay call refused", extra={"reason": problem})
                        metrics.add_metric(name="UnauthorizedCalls", unit=MetricUnit.Count, value=1)
                        return http_response(
                            401, {"function": function, "status": "refused", "error": problem}
                        )
                return _handle(
                    function, cause, http=request is not None, deps=deps, entry=entry, dry_run=dry_run
                )
            finally:
                # Per flush, not as a default dimension: Powertools' metric store is per process.
                metrics.add_dimension(name="function", value=function)
                metrics.flush_metrics(raise_on_empty_metrics=False)

    return handler


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
