"""Read a pod's `tensor-fusion.ai/*` annotations and scheduling constraints into a `GpuRequest`.

Role: the intake of the allocator — one parser shared by the webhook (to validate and default),
the extender and simulate-schedule (to place), and the rebuild (to read back what a pod holds
from its `tensor-fusion.ai/gpu-ids` annotation). Every bad value raises `RequestError` naming the
annotation and the value.

Must not: apply defaults from pools or quotas (the webhook does), or touch allocator state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from gpupool.core.allocator.host_request import pod_requests
from gpupool.core.allocator.records import Allocation, GpuInfo
from gpupool.core.allocator.request import GpuRequest, MatchExpression, NodeConstraints, NodeSelectorTerm
from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool.core.quantity import Quantity, QuantityError

__all__ = [
    "ANNOTATION_GPU_IDS",
    "RequestError",
    "allocation_from_pod",
    "parse_tflops",
    "parse_vram",
    "request_from_pod",
]

# TensorFusion's annotation for the GPUs a worker was given (comma-separated GPU names).
ANNOTATION_GPU_IDS: Final = c.ANNOTATION_GPU_IDS


class RequestError(ValueError):
    """A pod whose GPU annotations cannot be read; the message names the annotation and value."""


def _quantity(annotation: str, text: str) -> Quantity:
    try:
        value = Quantity.parse(text)
    except QuantityError as exc:
        raise RequestError(f"annotation {annotation}={text!r} is not a quantity ({exc})") from exc
    if value.value < 0:
        raise RequestError(f"annotation {annotation}={text!r} must not be negative")
    return value


def parse_tflops(annotation: str, text: str) -> int:
    """TFLOPS text ("100", "12.5", "500m") → milli-TFLOPS, rounded up."""
    return math.ceil(_quantity(annotation, text).value * 1000)


def parse_vram(annotation: str, text: str) -> int:
    """VRAM text ("16Gi", "800Mi") → bytes, rounded up."""
    return math.ceil(_quantity(annotation, text).value)


def _percent(annotation: str, text: str) -> float:
    value = float(_quantity(annotation, text).value)
    if not 0 < value <= 100:
        raise RequestError(f"annotation {annotation}={text!r} must be a percentage in (0, 100]")
    return value


def _int_in(annotation: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise RequestError(f"annotation {annotation}={text!r} is not a whole number") from None
    if not low <= value <= high:
        raise RequestError(f"annotation {annotation}={text!r} must be between {low} and {high}")
    return value


def _indices(text: str) -> frozenset[int]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise RequestError(f"annotation {c.ANNOTATION_GPU_INDICES}={text!r} lists no index")
    return frozenset(_int_in(c.ANNOTATION_GPU_INDICES, p, 0, 127) for p in parts)


def _expressions(raw: Any) -> tuple[MatchExpression, ...]:
    found: list[MatchExpression] = []
    for item in raw or ():
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise RequestError(f"node affinity expression {item!r} has no key")
        values = tuple(str(v) for v in item.get("values") or ())
        found.append(MatchExpression(key=item["key"], operator=str(item.get("operator", "")), values=values))
    return tuple(found)


def constraints_of(pod: Pod) -> NodeConstraints:
    """nodeSelector and requiredDuringSchedulingIgnoredDuringExecution node affinity."""
    terms: list[NodeSelectorTerm] = []
    affinity = pod.spec.affinity or {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if node_affinity else None
    for term in (required or {}).get("nodeSelectorTerms") or ():
        if not isinstance(term, Mapping):
            raise RequestError(f"nodeSelectorTerm {term!r} is not an object")
        terms.append(
            NodeSelectorTerm(
                match_expressions=_expressions(term.get("matchExpressions")),
                match_fields=_expressions(term.get("matchFields")),
            )
        )
    return NodeConstraints(
        node_selector=tuple(sorted(pod.spec.node_selector.items())), required_terms=tuple(terms)
    )


def request_from_pod(pod: Pod, *, default_pool: str = "") -> GpuRequest:
    """The GPU request a (mutated) TensorFusion pod carries, with its containers' CPU and memory
    requests (`host_request.pod_requests`); RequestError when unreadable."""
    notes = pod.metadata.annotations
    get = notes.get
    has_tflops = c.ANNOTATION_TFLOPS_REQUEST in notes or c.ANNOTATION_TFLOPS_LIMIT in notes
    has_percent = c.ANNOTATION_COMPUTE_PERCENT_REQUEST in notes or c.ANNOTATION_COMPUTE_PERCENT_LIMIT in notes
    if has_tflops and has_percent:
        raise RequestError("set either tflops-request/limit or compute-percent-request/limit, not both")
    # Limits are read first: when the webhook copied a bad limit into the request, the error
    # should name the annotation the user wrote.
    t_limit_text = get(c.ANNOTATION_TFLOPS_LIMIT)
    t_request_text = get(c.ANNOTATION_TFLOPS_REQUEST, t_limit_text)
    tflops_limit_read = parse_tflops(c.ANNOTATION_TFLOPS_LIMIT, t_limit_text) if t_limit_text else None
    tflops_request = parse_tflops(c.ANNOTATION_TFLOPS_REQUEST, t_request_text) if t_request_text else 0
    tflops_limit = tflops_request if tflops_limit_read is None else tflops_limit_read
    v_limit_text = get(c.ANNOTATION_VRAM_LIMIT)
    v_request_text = get(c.ANNOTATION_VRAM_REQUEST, v_limit_text)
    vram_limit_read = parse_vram(c.ANNOTATION_VRAM_LIMIT, v_limit_text) if v_limit_text else None
    vram_request = parse_vram(c.ANNOTATION_VRAM_REQUEST, v_request_text) if v_request_text else 0
    vram_limit = vram_request if vram_limit_read is None else vram_limit_read
    p_limit_text = get(c.ANNOTATION_COMPUTE_PERCENT_LIMIT)
    p_request_text = get(c.ANNOTATION_COMPUTE_PERCENT_REQUEST, p_limit_text)
    percent_limit_read = _percent(c.ANNOTATION_COMPUTE_PERCENT_LIMIT, p_limit_text) if p_limit_text else None
    percent_request = (
        _percent(c.ANNOTATION_COMPUTE_PERCENT_REQUEST, p_request_text) if p_request_text else None
    )
    percent_limit = percent_request if percent_limit_read is None else percent_limit_read
    if tflops_limit < tflops_request:
        raise RequestError(f"tflops-limit {t_limit_text} is below tflops-request {t_request_text}")
    if vram_limit < vram_request:
        raise RequestError(f"vram-limit {v_limit_text} is below vram-request {v_request_text}")
    if percent_request is not None and percent_limit is not None and percent_limit < percent_request:
        raise RequestError(
            f"compute-percent-limit {p_limit_text} is below compute-percent-request {p_request_text}"
        )
    count_text = get(c.ANNOTATION_GPU_COUNT)
    gpu_count = (
        _int_in(c.ANNOTATION_GPU_COUNT, count_text, c.GPU_COUNT_MIN, c.GPU_COUNT_MAX) if count_text else 1
    )
    qos = get(c.ANNOTATION_QOS, "medium")
    if qos not in c.QOS_LEVELS:
        raise RequestError(f"annotation {c.ANNOTATION_QOS}={qos!r} must be one of {', '.join(c.QOS_LEVELS)}")
    isolation = get(c.ANNOTATION_ISOLATION, c.DEFAULT_ISOLATION)
    if isolation not in c.ISOLATION_MODES:
        raise RequestError(
            f"annotation {c.ANNOTATION_ISOLATION}={isolation!r} must be one of {', '.join(c.ISOLATION_MODES)}"
        )
    indices_text = get(c.ANNOTATION_GPU_INDICES)
    dedicated_text = get(c.ANNOTATION_DEDICATED_GPU, "false").strip().lower()
    if dedicated_text not in ("true", "false"):
        raise RequestError(
            f"annotation {c.ANNOTATION_DEDICATED_GPU}={dedicated_text!r} must be true or false"
        )
    cpu_milli, memory = pod_requests(pod)
    return GpuRequest(
        namespace=pod.metadata.namespace or "default",
        name=pod.metadata.name or pod.metadata.generate_name or "",
        uid=pod.metadata.uid or "",
        pool=get(c.ANNOTATION_GPU_POOL, default_pool),
        tflops_request=tflops_request,
        tflops_limit=tflops_limit,
        vram_request=vram_request,
        vram_limit=vram_limit,
        compute_percent_request=percent_request,
        compute_percent_limit=percent_limit,
        gpu_count=gpu_count,
        gpu_model=get(c.ANNOTATION_GPU_MODEL) or None,
        vendor=get(c.ANNOTATION_VENDOR) or None,
        gpu_indices=_indices(indices_text) if indices_text else None,
        qos=qos,
        isolation=isolation,
        dedicated=dedicated_text == "true",
        cpu_milli=cpu_milli,
        memory=memory,
        constraints=constraints_of(pod),
    )


def allocation_from_pod(
    pod: Pod, gpus: Mapping[str, GpuInfo], *, default_pool: str = ""
) -> Allocation | None:
    """What a pod holds according to its `gpu-ids` annotation; None if it holds nothing we know."""
    text = pod.metadata.annotations.get(ANNOTATION_GPU_IDS, "")
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    known = [gpus[n] for n in names if n in gpus]
    if not known:
        return None
    request = request_from_pod(pod, default_pool=default_pool)
    vram_request, vram_limit = request.vram_request, max(request.vram_limit, request.vram_request)
    vram_requests: tuple[int, ...] = ()
    if request.dedicated:  # the whole of every GPU it holds
        t_requests = t_limits = tuple(g.tflops_capacity for g in known)
        vram_requests = tuple(g.vram_capacity for g in known)
        vram_request = vram_limit = vram_requests[0]
    elif request.compute_percent_request is not None:
        pct_req, pct_lim = request.compute_percent_request, request.compute_percent_limit or 0.0
        t_requests = tuple(math.ceil(g.tflops_capacity * pct_req / 100) for g in known)
        t_limits = tuple(math.ceil(g.tflops_capacity * max(pct_lim, pct_req) / 100) for g in known)
    else:
        t_requests = tuple(request.tflops_request for _ in known)
        t_limits = tuple(max(request.tflops_limit, request.tflops_request) for _ in known)
    return Allocation(
        namespace=request.namespace,
        name=request.name,
        node=pod.spec.node_name or known[0].node,
        gpus=tuple(g.name for g in known),
        tflops_requests=t_requests,
        tflops_limits=t_limits,
        vram_request=vram_request,
        vram_limit=vram_limit,
        uid=request.uid,
        isolation=request.isolation,
        dedicated=request.dedicated,
        vram_requests=vram_requests,
    )
