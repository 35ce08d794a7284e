"""The relay's HTTP surface (Starlette): extender, pod webhook, simulate / allocation API, health.

Routes: POST /scheduler/filter, /scheduler/prioritize, /scheduler/bind (kube-scheduler extender
v1 shapes); POST /mutate-pod (AdmissionReview v1); POST /api/simulate-schedule (a Pod as YAML
or JSON); GET /api/allocation; GET /healthz. Extender errors travel in the result's `Error`
field with HTTP 200, as the extender protocol expects; malformed bodies get 400 with a message.

Must not: decide anything (the hub and the core do) or block the event loop on the API server
(bind runs in the thread pool).
"""

from __future__ import annotations

import json
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
from gpupool_incluster.relay.hub import BindFailed, SchedulerHub
from gpupool_incluster.relay.report import allocation_report, simulation_report

__all__ = ["create_app"]

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


def create_app(hub: SchedulerHub) -> Starlette:
    """The relay application over one hub."""

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
        return JSONResponse(hub.filter(args))

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

    routes = [
        Route("/scheduler/filter", scheduler_filter, methods=["POST"]),
        Route("/scheduler/prioritize", scheduler_prioritize, methods=["POST"]),
        Route("/scheduler/bind", scheduler_bind, methods=["POST"]),
        Route("/mutate-pod", mutate_pod, methods=["POST"]),
        Route("/api/simulate-schedule", simulate_schedule, methods=["POST"]),
        Route("/api/allocation", allocation, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]
    return Starlette(routes=routes)
