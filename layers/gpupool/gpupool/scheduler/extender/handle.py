"""Extender decisions: filter, prioritize and the reservation half of bind, over the allocator.

Role: classify the pod (a TensorFusion worker with GPU annotations; a pod keeping native
nvidia.com/gpu under progressive migration; anything else), then answer in kube-scheduler's
shapes. A pod that already holds GPUs (a gang member waiting for the rest, see `gang`) passes only
its node. A node AutoSelect made for another pod, still waiting, is refused to a pod that would
crowd that one out while the reservation holds (`reservation`), at filter and at bind. Bind here
only reserves GPUs (or explains why it cannot); writing the GPU annotation and the Binding is the
relay's job, which releases the GPUs if either write fails.

Must not: lock, call the API server, or log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gpupool.core.allocator.allocator import AllocationError, Allocator
from gpupool.core.allocator.filters import STAGES
from gpupool.core.allocator.pod_request import RequestError, request_from_pod
from gpupool.core.allocator.records import Allocation
from gpupool.core.allocator.request import GpuRequest
from gpupool.core.model.foreign import Pod
from gpupool.core.vocabulary.pods import asks_for_index_resources, asks_gpupool_for_gpus, holds_native_gpus
from gpupool.scheduler.extender.reservation import RESERVED, Reservation, reserved_refusals
from gpupool.scheduler.extender.wire import ExtenderArgs, filter_result, host_priority_list

__all__ = [
    "FAILURE_REASONS",
    "Reservations",
    "classify",
    "failure_reason",
    "handle_filter",
    "handle_prioritize",
    "reserve_for_bind",
]

STRANGER = "stranger"
# Holding reservations: node → the reservation and the request of the pod it is for, still waiting.
Reservations = Mapping[str, tuple[Reservation, GpuRequest]]
_NONE: Reservations = {}


def classify(raw: Mapping[str, Any], *, default_pool: str) -> GpuRequest | str | None:
    """A GpuRequest for a pod asking gpupool for GPUs, "native" for a native-GPU pod, STRANGER for
    a pod asking for index resources that is neither, None for others.

    The kinds are the vocabulary's (`core.vocabulary.pods`), the one definition the webhook, the
    pod guard, the device plugin and the agent share. A pod still holding nvidia.com/gpu is native
    even when it carries TensorFusion annotations: the webhook removes nvidia.com/gpu from every
    pod it moves, and leaves replicas beyond `enabled-replicas` as they were. Raises RequestError
    for a GPU pod whose annotations cannot be read.
    """
    try:
        pod = Pod.model_validate(raw)
    except ValidationError as exc:
        raise RequestError(f"pod object is not readable: {exc.errors()[0].get('msg', exc)}") from None
    if holds_native_gpus(pod):
        return "native"
    if asks_gpupool_for_gpus(pod):
        return request_from_pod(pod, default_pool=default_pool)
    if asks_for_index_resources(pod):
        return STRANGER
    return None


_STRANGER_REASON = (
    "the pod asks for tensor-fusion.ai/index_* resources but not gpupool for GPUs (no "
    "tensor-fusion.ai/enabled=true label with GPU annotations): it is never placed"
)


def _native_filter(allocator: Allocator, nodes: list[str]) -> tuple[list[str], dict[str, str]]:
    state = allocator.state
    state.ensure_layout()
    passed: list[str] = []
    failed: dict[str, str] = {}
    for node in nodes:
        row = state.node_index.get(node)
        workers = 0 if row is None else int(state.node_workers[row])
        if workers:
            failed[node] = (
                f"nativeGpu: node runs {workers} TensorFusion worker(s); pods holding native nvidia.com/gpu "
                "only go to nodes TensorFusion has not allocated (progressive migration)"
            )
        else:
            passed.append(node)
    return passed, failed


def handle_filter(
    allocator: Allocator, args: ExtenderArgs, *, default_pool: str, reservations: Reservations = _NONE
) -> dict[str, Any]:
    """ExtenderFilterResult for one pod; a pod we cannot read fails every node with the reason."""
    try:
        kind = classify(args.pod, default_pool=default_pool)
    except RequestError as exc:
        reason = f"pod's GPU annotations are invalid: {exc}"
        return filter_result(args, passed=[], failed={}, unresolvable=dict.fromkeys(args.node_names, reason))
    if kind is None:
        return filter_result(args, passed=args.node_names, failed={})
    if kind == STRANGER:
        unresolvable = dict.fromkeys(args.node_names, _STRANGER_REASON)
        return filter_result(args, passed=[], failed={}, unresolvable=unresolvable)
    if kind == "native":
        passed, failed = _native_filter(allocator, args.node_names)
        return filter_result(args, passed=passed, failed=failed)
    assert isinstance(kind, GpuRequest)
    held = allocator.state.allocations.get(kind.key)
    if held is not None:  # a gang member waiting for the rest keeps its GPUs on one node
        reason = f"pod holds GPUs {', '.join(held.gpus)} on {held.node} (waiting for its gang)"
        others = {node: reason for node in args.node_names if node != held.node}
        return filter_result(args, passed=[n for n in args.node_names if n == held.node], failed=others)
    result = allocator.filter(kind, args.node_names)
    refused = reserved_refusals(allocator, kind, result.passed, reservations)
    passed = [node for node in result.passed if node not in refused]
    return filter_result(args, passed=passed, failed={**result.failed, **refused})


# A filter that left a pod no node, said in a word a metric label can carry (a bounded set): the
# allocator's filter stage most nodes were lost at, or why the pod was refused before any stage.
INVALID_REQUEST = "invalidRequest"
GANG = "gang"
FAILURE_REASONS: tuple[str, ...] = (*STAGES, RESERVED, INVALID_REQUEST, GANG, "other")


def failure_reason(result: Mapping[str, Any]) -> str:
    """The `FAILURE_REASONS` word for a filter result that passed no node (from its reasons'
    `stage:` prefixes, the most frequent first; ties by stage order)."""
    if result.get("FailedAndUnresolvableNodes"):
        return INVALID_REQUEST
    failed = result.get("FailedNodes") or {}
    counts: dict[str, int] = {}
    for reason in failed.values():
        text = str(reason)
        stage = GANG if text.startswith("pod holds GPUs") else text.split(":", 1)[0]
        word = stage if stage in FAILURE_REASONS else "other"
        counts[word] = counts.get(word, 0) + 1
    if not counts:
        return "other"
    return max(counts, key=lambda word: (counts[word], -FAILURE_REASONS.index(word)))


def handle_prioritize(allocator: Allocator, args: ExtenderArgs, *, default_pool: str) -> list[dict[str, Any]]:
    """HostPriorityList (0..10); neutral zeros for pods that are not TensorFusion workers."""
    try:
        kind = classify(args.pod, default_pool=default_pool)
    except RequestError:
        kind = None
    if not isinstance(kind, GpuRequest):
        return host_priority_list(dict.fromkeys(args.node_names, 0))
    return host_priority_list(allocator.prioritize(kind, args.node_names))


def reserve_for_bind(
    allocator: Allocator,
    pod_raw: Mapping[str, Any],
    node: str,
    *,
    default_pool: str,
    reservations: Reservations = _NONE,
) -> Allocation | None:
    """Hold GPUs on `node` for the pod (None for a native GPU pod, which holds none of ours).

    Raises AllocationError when another bind took the capacity or the node is reserved for a pod
    this one would crowd out (`reservation`), or RequestError for bad
    annotations or a pod that asks gpupool for no GPUs and is not native: the relay answers
    ExtenderBindingResult.Error and binds nothing — so every pod it binds but a native one gets
    its allocation record.
    """
    kind = classify(pod_raw, default_pool=default_pool)
    if kind == "native":
        return None
    if not isinstance(kind, GpuRequest):
        raise RequestError(
            "not bound: the pod does not ask gpupool for GPUs (a tensor-fusion.ai/enabled=true label "
            "with GPU annotations) and is not a native GPU pod, so it would hold no allocation record"
        )
    held = allocator.state.allocations.get(kind.key)
    if held is not None and held.node == node and (not kind.uid or held.uid == kind.uid):
        return held
    if held is not None:
        raise AllocationError(f"pod {kind.key} already holds GPUs {', '.join(held.gpus)} on {held.node}")
    refused = reserved_refusals(allocator, kind, [node], reservations)
    if refused:
        raise AllocationError(refused[node])
    return allocator.reserve(kind, node)
