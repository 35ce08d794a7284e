"""The relay's HTTP surface (Starlette): extender, pod webhook, simulate / allocation API, health, metrics.

Routes: POST /scheduler/filter, /scheduler/prioritize, /scheduler/bind (kube-scheduler extender
v1 shapes); POST /mutate-pod (AdmissionReview v1); POST /api/simulate-schedule (a Pod as YAML
or JSON); GET /api/allocation; GET /healthz (liveness); GET /readyz (503 until every watch has
synced); GET /metrics (Prometheus). Extender errors travel in the result's `Error`
field with HTTP 200, as the extender protocol expects; malformed bodies get 400 with a message.
`surfaces` picks the route groups one listener serves (serve.py: the extender on loopback only;
the webhook, and the API behind `access` when enabled, on the Service port); with `access`,
every /api/* request needs a bearer token the API server accepts and authorizes (401 / 403).

Must not: decide anything (the hub and the core do) or block the event loop on the API server
(bind runs in the thread pool).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import yaml
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gpupool.core.admission import Denial, ReviewError, allowed, denied, parse_review
from gpupool.core.allocator.pod_request import RequestError
from gpupool.core.extender import WireError, binding_result, parse_binding_args, parse_extender_args
from gpupool.core.model.constants import ANNOTATION_GPU_POOL
from gpupool_incluster.relay.access import TokenAccess
from gpupool_incluster.relay.hub import BindFailed, SchedulerHub
from gpupool_incluster.relay.metrics import CONTENT_TYPE, RelayMetrics
from gpupool_incluster.relay.report import allocation_report, simulation_report

__all__ = ["ALL_SURFACES", "create_app"]

ALL_SURFACES = frozenset({"extender", "webhook", "api", "health", "metrics"})
RouteHandler = Callable[[Request], Awaitable[Response]]

MAX_BODY = 8 << 20


async def _json(request: Request) -> Any:
    body = await request.body()
    if len(body) > MAX_BODY:
        raise WireError(f"body larger than {MAX_BODY} bytes")
    try:
        return json.loads(body)
    except ValueError as exc:
        raise WireError(f"body is not JSON: {exc}") from None


def _bad(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _timed(metrics: RelayMetrics | None, route: str, handler: RouteHandler) -> RouteHandler:
    if metrics is None:
        return handler
    histogram = metrics.request_latency.labels(route)

    async def timed(request: Request) -> Response:
        started = time.perf_counter()
        try:
            return await handler(request)
        finally:
            histogram.observe(time.perf_counter() - started)

    return timed


def _guarded(access: TokenAccess | None, verb: str, path: str, handler: RouteHandler) -> RouteHandler:
    if access is None:
        return handler

    async def guarded(request: Request) -> Response:
        denied = await run_in_threadpool(access.check, request.headers.get("authorization", ""), verb, path)
        if denied is not None:
            return JSONResponse({"error": denied.message}, status_code=denied.status)
        return await handler(request)

    return guarded


def create_app(
    hub: SchedulerHub,
    *,
    surfaces: Collection[str] = ALL_SURFACES,
    metrics: RelayMetrics | None = None,
    access: TokenAccess | None = None,
    ready: Callable[[], bool] | None = None,
) -> Starlette:
    """The relay application over one hub, serving the route groups in `surfaces`."""
    unknown = set(surfaces) - ALL_SURFACES
    if unknown:
        raise ValueError(f"unknown relay surfaces: {sorted(unknown)}")
    is_ready = ready or hub.synced.is_set

    async def scheduler_filter(request: Request) -> Response:
        try:
            args = parse_extender_args(await _json(request))
        except WireError as exc:
            return JSONResponse(
                {
                    "Nodes": None,
                    "NodeNames": None,
                    "FailedNodes": {},
                    "FailedAndUnresolvableNodes": {},
                    "Error": str(exc),
                }
            )
        result = hub.filter(args)
        passed = result.get("NodeNames") or ((result.get("Nodes") or {}).get("items") or [])
        if metrics is not None and args.node_names and not passed and not result.get("Error"):
            annotations = (args.pod.get("metadata") or {}).get("annotations") or {}
            pool = annotations.get(ANNOTATION_GPU_POOL) or hub.default_pool
            metrics.allocation_failures.labels(str(pool)).inc()  # WorkerAllocationFailed (docs/alerts.md)
        return JSONResponse(result)

    async def scheduler_prioritize(request: Request) -> Response:
        try:
            args = parse_extender_args(await _json(request))
        except WireError as exc:
            return _bad(str(exc))
        return JSONResponse(hub.prioritize(args))

    async def scheduler_bind(request: Request) -> Response:
        try:
            args = parse_binding_args(await _json(request))
        except WireError as exc:
            return JSONResponse(binding_result(str(exc)))
        try:
            await run_in_threadpool(hub.bind, args.pod_namespace, args.pod_name, args.pod_uid, args.node)
        except BindFailed as exc:
            return JSONResponse(binding_result(str(exc)))
        return JSONResponse(binding_result())

    async def mutate_pod(request: Request) -> Response:
        try:
            review = parse_review(await _json(request))
        except (WireError, ReviewError) as exc:
            return _bad(str(exc))
        if review.operation != "CREATE":
            return JSONResponse(allowed(review.uid))
        try:
            mutation = hub.admit(review.pod, review.namespace, record=not review.dry_run)
        except Denial as exc:
            return JSONResponse(denied(review.uid, f"gpupool: {exc}"))
        return JSONResponse(allowed(review.uid, mutation.patch, mutation.notes))

    async def simulate_schedule(request: Request) -> Response:
        body = await request.body()
        try:
            pod = yaml.safe_load(body) if body.strip() else None
        except yaml.YAMLError as exc:
            return _bad(f"body is neither JSON nor YAML: {exc}")
        if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
            return _bad("body must be one Pod manifest (YAML or JSON)")
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        try:
            mutation, simulation = hub.simulate(pod, namespace)
        except (Denial, RequestError) as exc:
            verdict = "the webhook would reject this pod" if isinstance(exc, Denial) else "cannot simulate"
            return JSONResponse(
                {
                    "node": None,
                    "gpus": [],
                    "filterStages": [],
                    "diagnosis": f"{verdict}: {exc}",
                },
                status_code=422,
            )
        return JSONResponse(simulation_report(mutation, simulation))

    async def allocation(request: Request) -> Response:
        with hub.lock:
            return JSONResponse(allocation_report(hub.allocator))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "synced": hub.synced.is_set()})

    async def readyz(request: Request) -> Response:
        synced = is_ready()
        return JSONResponse({"ready": synced}, status_code=200 if synced else 503)

    async def metrics_page(request: Request) -> Response:
        assert metrics is not None
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    groups: dict[str, list[Route]] = {
        "extender": [
            Route("/scheduler/filter", _timed(metrics, "filter", scheduler_filter), methods=["POST"]),
            Route(
                "/scheduler/prioritize", _timed(metrics, "prioritize", scheduler_prioritize), methods=["POST"]
            ),
            Route("/scheduler/bind", _timed(metrics, "bind", scheduler_bind), methods=["POST"]),
        ],
        "webhook": [Route("/mutate-pod", _timed(metrics, "mutate-pod", mutate_pod), methods=["POST"])],
        "api": [
            Route(
                "/api/simulate-schedule",
                _timed(
                    metrics,
                    "simulate-schedule",
                    _guarded(access, "post", "/api/simulate-schedule", simulate_schedule),
                ),
                methods=["POST"],
            ),
            Route(
                "/api/allocation",
                _timed(metrics, "allocation", _guarded(access, "get", "/api/allocation", allocation)),
                methods=["GET"],
            ),
        ],
        "health": [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])],
        "metrics": [Route("/metrics", metrics_page, methods=["GET"])] if metrics is not None else [],
    }
    return Starlette(routes=[route for name in sorted(surfaces) for route in groups[name]])
