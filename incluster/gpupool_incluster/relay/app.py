"""The relay's HTTP surface (Starlette): extender, pod webhook, simulate / allocation API, health, metrics.

Routes: POST /scheduler/filter, /scheduler/prioritize, /scheduler/bind (kube-scheduler extender
v1 shapes); POST /mutate-pod (AdmissionReview v1); POST /api/simulate-schedule (a Pod as YAML
or JSON); GET /api/allocation; GET /healthz (liveness); GET /readyz (503 until every watch has
synced); GET /metrics (Prometheus). Every body is read through `bodies`: over `MAX_BODY` bytes
(by Content-Length, or counted while it streams) → 413; not JSON, nested deeper than `MAX_DEPTH`,
or not the shape the route reads → 400, except that the extender's filter and bind answer such a
body in the result's `Error` field with HTTP 200, as the extender protocol expects (prioritize's
HostPriorityList has no such field: 400). Parsing and deciding run in the thread pool, so a body
that is slow to read costs its own request, never the event loop. `surfaces` picks the route groups
one listener serves (serve.py: the extender on loopback only; the webhook, and the API behind
`access` when enabled, on the Service port; /metrics never there); with `access`, every /api/*
request needs a bearer token the API server accepts for the relay's audience and authorizes (401 /
403). The webhook decides `enabled-replicas` from the Pod watch; while a replica it just let move
is not in the watch yet, an admission of the same owner waits for it (`replicas`), at most
`HubSettings.replica_settle` seconds, asleep on the event loop (no thread held).

Must not: decide anything (the hub and the core do) or block the event loop on the API server or
on a parser.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gpupool.core.allocator.pod_request import RequestError
from gpupool.core.model.constants import ANNOTATION_GPU_POOL
from gpupool.scheduler.admission import (
    AdmissionRequest,
    Denial,
    Mutation,
    ReviewError,
    allowed,
    denied,
    parse_review,
)
from gpupool.scheduler.extender import (
    WireError,
    binding_result,
    failure_reason,
    filter_error,
    parse_binding_args,
    parse_extender_args,
)
from gpupool_incluster.relay.access import TokenAccess
from gpupool_incluster.relay.bodies import MAX_MANIFEST, BodyRefused, parse_json, parse_manifest, read_body
from gpupool_incluster.relay.hub import BindFailed, SchedulerHub
from gpupool_incluster.relay.metrics import CONTENT_TYPE, RelayMetrics
from gpupool_incluster.relay.report import allocation_report, simulation_report

__all__ = ["ALL_SURFACES", "create_app"]

ALL_SURFACES = frozenset({"extender", "webhook", "api", "health", "metrics"})
RouteHandler = Callable[[Request], Awaitable[Response]]
SETTLE_POLL_SECONDS = 0.02


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


def _status(refused: BodyRefused) -> int:
    """An extender body too large is HTTP 413; any other refusal travels in `Error` with a 200."""
    return 413 if refused.status == 413 else 200


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

    def filter_now(body: bytes) -> dict[str, Any]:
        args = parse_extender_args(parse_json(body))
        result = hub.filter(args)
        passed = result.get("NodeNames") or ((result.get("Nodes") or {}).get("items") or [])
        if metrics is not None and args.node_names and not passed and not result.get("Error"):
            annotations = (args.pod.get("metadata") or {}).get("annotations") or {}
            pool = annotations.get(ANNOTATION_GPU_POOL) or hub.default_pool
            reason = failure_reason(result)
            metrics.allocation_failures.labels(
                str(pool), reason
            ).inc()  # WorkerAllocationFailed (docs/alerts.md)
        return result

    async def scheduler_filter(request: Request) -> Response:
        try:
            body = await read_body(request)
            return JSONResponse(await run_in_threadpool(filter_now, body))
        except BodyRefused as refused:
            return JSONResponse(filter_error(refused.message), status_code=_status(refused))
        except WireError as exc:
            return JSONResponse(filter_error(str(exc)))

    def prioritize_now(body: bytes) -> list[dict[str, Any]]:
        return hub.prioritize(parse_extender_args(parse_json(body)))

    async def scheduler_prioritize(request: Request) -> Response:
        try:
            body = await read_body(request)
            return JSONResponse(await run_in_threadpool(prioritize_now, body))
        except BodyRefused as refused:
            return _bad(refused.message, refused.status)
        except WireError as exc:
            return _bad(str(exc))

    def bind_now(body: bytes) -> dict[str, str]:
        args = parse_binding_args(parse_json(body))
        try:
            hub.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)
        except BindFailed as exc:
            return binding_result(str(exc))
        return binding_result()

    async def scheduler_bind(request: Request) -> Response:
        try:
            body = await read_body(request)
            return JSONResponse(await run_in_threadpool(bind_now, body))
        except BodyRefused as refused:
            return JSONResponse(binding_result(refused.message), status_code=_status(refused))
        except WireError as exc:
            return JSONResponse(binding_result(str(exc)))

    def review_of(body: bytes) -> AdmissionRequest:
        return parse_review(parse_json(body))

    async def admit_settled(review: AdmissionRequest) -> Mutation:
        """Wait (asleep, bounded) while the owner's last moved replica is not in the watch yet."""
        deadline = time.monotonic() + hub.settings.replica_settle
        while True:
            settled = time.monotonic() >= deadline
            mutation = await run_in_threadpool(
                functools.partial(
                    hub.try_admit, review.pod, review.namespace, record=not review.dry_run, settled=settled
                )
            )
            if mutation is not None:
                return mutation
            await asyncio.sleep(SETTLE_POLL_SECONDS)

    async def mutate_pod(request: Request) -> Response:
        try:
            review = await run_in_threadpool(review_of, await read_body(request))
        except BodyRefused as refused:
            return _bad(refused.message, refused.status)
        except ReviewError as exc:
            return _bad(str(exc))
        if review.operation != "CREATE":
            return JSONResponse(allowed(review.uid))
        try:
            mutation = await admit_settled(review)
        except Denial as exc:
            return JSONResponse(denied(review.uid, f"gpupool: {exc}"))
        return JSONResponse(allowed(review.uid, mutation.patch, mutation.notes))

    def simulate_now(body: bytes) -> JSONResponse:
        pod = parse_manifest(body) if body.strip() else None
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

    async def simulate_schedule(request: Request) -> Response:
        try:
            body = await read_body(request, MAX_MANIFEST)
            return await run_in_threadpool(simulate_now, body)
        except BodyRefused as refused:
            return _bad(refused.message, refused.status)

    def allocation_now() -> dict[str, Any]:
        with hub.lock:
            return allocation_report(hub.allocator)

    async def allocation(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(allocation_now))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "synced": hub.synced.is_set()})

    async def readyz(request: Request) -> Response:
        synced = is_ready()
        return JSONResponse({"ready": synced}, status_code=200 if synced else 503)

    async def metrics_page(request: Request) -> Response:
        assert metrics is not None
        return Response(await run_in_threadpool(metrics.render), media_type=CONTENT_TYPE)

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
