"""The body shared by the three Lambda handlers (launch, bind, compact).

Role: parse the envelope (``intake_aws``), call the function's service entry point with deps
built once per cold start, map the outcome. Retryable → raise (Lambda retries, then the
on-failure SQS destination); permanent → logged and acknowledged; on the Function URL →
HTTP 200 / 400 (unreadable or misrouted event, nothing changed) / 503 (retry later).
``functions/<name>/app.py`` binds it to one function: ``handler = make_handler("launch")``.

Must not: decide anything, talk to AWS or Kubernetes itself, or import boto3 / kubernetes at
module import (``gpupool.adapters.wiring`` is imported when the first real event needs deps).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from gpupool.core.intake.aws import intake_aws, is_function_url
from gpupool.core.intake.causes import Cause, Ignored
from gpupool.core.intake.routing import FUNCTIONS, FunctionName

if TYPE_CHECKING:
    from gpupool.service.deps import Deps
    from gpupool.service.outcome import Outcome

# Named "gpupool" on purpose: the service's stdlib logger "gpupool.service" is its child, so
# the service's records go through this JSON handler with the same per-event keys.
logger = Logger(service="gpupool")
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "gpupool"))

Handler = Callable[[Any, Any], dict[str, Any]]


class ServiceEntry(Protocol):
    def __call__(self, cause: Cause, deps: Deps, /, *, dry_run: bool = False) -> Outcome: ...


class RetryableFailure(RuntimeError):
    """Raised so Lambda retries the event (and sends it to the DLQ when retries run out)."""


def aws_deps() -> Deps:
    """Deps for the real cloud, from the function's environment (imports boto3 / kubernetes)."""
    from gpupool.adapters.wiring import build_aws_deps

    return build_aws_deps(os.environ)


def service_entry(function: FunctionName) -> Callable[[], ServiceEntry]:
    """A loader of the function's service entry point (``gpupool.service.<f>.handle_<f>``)."""

    def load() -> ServiceEntry:
        module = importlib.import_module(f"gpupool.service.{function}")
        entry: ServiceEntry = getattr(module, f"handle_{function}")
        return entry

    return load


def _http(status: int, body: Mapping[str, object]) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if status == 503:
        headers["retry-after"] = "5"
    return {"statusCode": status, "headers": headers, "body": json.dumps(body, default=str)}


def make_handler(
    function: FunctionName,
    deps_factory: Callable[[], Deps] = aws_deps,
    *,
    service: Callable[[], ServiceEntry] | None = None,
    dry_run: bool = False,
) -> Handler:
    """A Lambda handler whose deps come from ``deps_factory`` (called once, on first need).

    Tests and ``gpupool invoke`` pass fakes or sandbox-backed deps here; nothing is patched.
    """
    if function not in FUNCTIONS:
        raise ValueError(f"unknown function {function!r}; expected one of {', '.join(FUNCTIONS)}")
    load_service = service or service_entry(function)
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
        url = is_function_url(event)
        cause = intake_aws(event, function=function)
        # The fixed keys (pool, claim, node, instance_id, event_id) this cause fills; the
        # service adds `action` to each action it logs.
        keys = {"function": function, **cause.log_keys()}
        with logger.append_context_keys(**keys, request_id=getattr(context, "aws_request_id", None)):
            try:
                return _handle(function, cause, url=url, deps=deps, entry=entry, dry_run=dry_run)
            finally:
                # Per flush, not as a default dimension: Powertools' metric store is per process.
                metrics.add_dimension(name="function", value=function)
                metrics.flush_metrics(raise_on_empty_metrics=False)

    return handler


def _handle(
    function: FunctionName,
    cause: Cause,
    *,
    url: bool,
    deps: Callable[[], Deps],
    entry: Callable[[], ServiceEntry],
    dry_run: bool,
) -> dict[str, Any]:
    summary: dict[str, Any] = {"function": function, "cause": cause.model_dump(mode="json")}
    if isinstance(cause, Ignored):
        logger.info("event ignored", extra={"reason": cause.reason})
        metrics.add_metric(name="EventsIgnored", unit=MetricUnit.Count, value=1)
        if url:
            return _http(400, {**summary, "status": "ignored", "error": cause.reason})
        return {**summary, "status": "ignored", "reason": cause.reason}
    metrics.add_metric(name=f"Cause_{cause.kind}", unit=MetricUnit.Count, value=1)
    try:
        outcome = entry()(cause, deps(), dry_run=dry_run)
    except Exception as error:
        if getattr(error, "retryable", True) is False:
            # A permanent domain error: retrying cannot help, so acknowledge it and say why.
            logger.error("permanent failure", extra={"error": str(error)})
            metrics.add_metric(name="PermanentFailures", unit=MetricUnit.Count, value=1)
            body = {**summary, "status": "failed", "errors": [str(error)]}
            return _http(200, body) if url else body
        logger.exception("retryable failure")
        metrics.add_metric(name="RetryableFailures", unit=MetricUnit.Count, value=1)
        if url:
            return _http(503, {**summary, "status": "retry", "errors": [str(error)]})
        raise
    result = {**summary, "status": "handled", "dry_run": dry_run, **outcome.to_json()}
    metrics.add_metric(name="ActionsApplied", unit=MetricUnit.Count, value=len(outcome.applied))
    metrics.add_metric(name="ActionErrors", unit=MetricUnit.Count, value=len(outcome.errors))
    if outcome.retryable:
        logger.warning("retryable errors; asking for a retry", extra={"errors": outcome.errors})
        metrics.add_metric(name="RetryableFailures", unit=MetricUnit.Count, value=1)
        if url:
            return _http(503, {**result, "status": "retry"})
        raise RetryableFailure("; ".join(outcome.errors) or f"{function}: retryable failure")
    if outcome.errors:
        logger.error("permanent errors acknowledged", extra={"errors": outcome.errors})
    else:
        logger.info("handled", extra={"actions": len(outcome.plan.actions), "applied": len(outcome.applied)})
    return _http(200, result) if url else result
