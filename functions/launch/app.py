"""Lambda handler for **launch**: close each pool's capacity gap.

Role: parse the envelope (``intake_aws``), call the service entry point with deps built once
per cold start, map the outcome. Triggers: schedules (reconcile every pool) and the relay's
``pod.unschedulable`` / ``pool.changed`` / ``cluster.changed`` CloudEvents on the Function URL.
Outcomes: retryable → raise (Lambda retries, then the on-failure SQS destination); permanent
→ logged and acknowledged; on the Function URL → HTTP 200 / 400 (unreadable or misrouted
event, nothing changed) / 503 (retry later).

Must not: decide anything, talk to AWS or Kubernetes itself, or import boto3 / kubernetes at
module import (``gpupool.adapters.wiring`` is imported when the first real event needs deps).
The three handlers (launch, bind, compact) share this body verbatim below the marked
configuration block; tests/service/test_handlers.py checks that they do.
"""

from __future__ import annotations

from typing import Final

# ---- configuration: the only lines that differ between the three handlers -----------------
FUNCTION: Final = "launch"
SERVICE_MODULE = "gpupool.service.launch"
SERVICE_ENTRY = "handle_launch"
# ---- end of configuration -----------------------------------------------------------------

import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from collections.abc import Callable, Mapping  # noqa: E402
from typing import TYPE_CHECKING, Any, Protocol  # noqa: E402

from aws_lambda_powertools import Logger, Metrics  # noqa: E402
from aws_lambda_powertools.metrics import MetricUnit  # noqa: E402

from gpupool.core.intake.aws import intake_aws, is_function_url  # noqa: E402
from gpupool.core.intake.causes import Cause, Ignored  # noqa: E402

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


def service_entry() -> ServiceEntry:
    """The service entry point, imported on first use."""
    entry: ServiceEntry = getattr(importlib.import_module(SERVICE_MODULE), SERVICE_ENTRY)
    return entry


def _http(status: int, body: Mapping[str, object]) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if status == 503:
        headers["retry-after"] = "5"
    return {"statusCode": status, "headers": headers, "body": json.dumps(body, default=str)}


def make_handler(
    deps_factory: Callable[[], Deps] = aws_deps,
    *,
    service: Callable[[], ServiceEntry] = service_entry,
    dry_run: bool = False,
) -> Handler:
    """A Lambda handler whose deps come from ``deps_factory`` (called once, on first need).

    Tests and ``gpupool invoke`` pass fakes or sandbox-backed deps here; nothing is patched.
    """
    built: dict[str, Any] = {}

    def deps() -> Deps:
        if "deps" not in built:  # a failed build is not cached: the next event tries again
            built["deps"] = deps_factory()
        result: Deps = built["deps"]
        return result

    def entry() -> ServiceEntry:
        if "service" not in built:
            built["service"] = service()
        result: ServiceEntry = built["service"]
        return result

    def handler(event: Any, context: Any) -> dict[str, Any]:
        url = is_function_url(event)
        cause = intake_aws(event, function=FUNCTION)
        # The fixed keys (pool, claim, node, instance_id, event_id) this cause fills; the
        # service adds `action` to each action it logs.
        keys = {"function": FUNCTION, **cause.log_keys()}
        with logger.append_context_keys(**keys, request_id=getattr(context, "aws_request_id", None)):
            try:
                return _handle(cause, url=url, deps=deps, entry=entry, dry_run=dry_run)
            finally:
                # Per flush, not as a default dimension: Powertools' metric store is per process.
                metrics.add_dimension(name="function", value=FUNCTION)
                metrics.flush_metrics(raise_on_empty_metrics=False)

    return handler


def _handle(
    cause: Cause,
    *,
    url: bool,
    deps: Callable[[], Deps],
    entry: Callable[[], ServiceEntry],
    dry_run: bool,
) -> dict[str, Any]:
    summary: dict[str, Any] = {"function": FUNCTION, "cause": cause.model_dump(mode="json")}
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
        raise RetryableFailure("; ".join(outcome.errors) or f"{FUNCTION}: retryable failure")
    if outcome.errors:
        logger.error("permanent errors acknowledged", extra={"errors": outcome.errors})
    else:
        logger.info("handled", extra={"actions": len(outcome.plan.actions), "applied": len(outcome.applied)})
    return _http(200, result) if url else result


handler = make_handler()
