"""GPUResourcesFit filter stages, vectorised over every GPU slot of the allocator's state.

Role: given the state and one request, compute which GPU slots survive each stage, in
TensorFusion's order — pool, phase, index, isolation (modes that may share a GPU, dedicated
GPUs), partition (partitioned workers need a GPU with partitions), resources (physical free vs
requests), then our oversubscription bound on limits, model, vendor, node affinity, native-GPU
nodes (progressive migration), same node for gpu-count > 1, maxWorkerPerNode, quota. Each stage
is a handful of numpy operations over the (nodes × GPU slots) arrays, so a request costs tens of
microseconds per thousand GPUs. Stage masks are kept only when the caller wants reasons.

Must not: mutate state, pick a winner (see `scoring`) or format reasons (see `reasons`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gpupool.core.allocator.affinity import node_constraint_failure
from gpupool.core.allocator.request import GpuRequest, NodeConstraints
from gpupool.core.allocator.rows import and_rows, row_count
from gpupool.core.allocator.state import AllocatorState

__all__ = [
    "STAGES",
    "FilterOutcome",
    "StageMasks",
    "per_gpu_tflops",
    "per_gpu_vram",
    "run_filters",
    "share_of",
]

B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]

STAGES = (
    "pool",
    "phase",
    "index",
    "isolation",
    "partition",
    "resources",
    "oversubscription",
    "model",
    "vendor",
    "nodeAffinity",
    "nativeGpu",
    "sameNode",
    "maxWorkerPerNode",
    "quota",
)


@dataclass(slots=True)
class StageMasks:
    """Slots alive before and after one stage, shaped (nodes, GPU slots)."""

    name: str
    before: B
    after: B


@dataclass(slots=True)
class FilterOutcome:
    """Slots that passed every stage, and — when asked for — each stage's masks.

    TFLOPS request / limit are one number for every GPU, or an array per slot when the pod
    asks for a compute percentage (a share of each GPU's own capacity) or a dedicated GPU (all
    of it, VRAM included: then the VRAM request is per slot too, and the limits equal it).
    """

    alive: B
    tflops_request: I64 | int
    tflops_limit: I64 | int
    vram_request: I64 | int = 0
    vram_limit: I64 | int = 0
    stages: list[StageMasks] = field(default_factory=list)
    quota_failure: str | None = None

    def request_at(self, slot: int) -> int:
        value = self.tflops_request
        return value if isinstance(value, int) else int(value[slot])

    def limit_at(self, slot: int) -> int:
        value = self.tflops_limit
        return value if isinstance(value, int) else int(value[slot])

    def vram_at(self, slot: int) -> int:
        value = self.vram_request
        return value if isinstance(value, int) else int(value[slot])

    def vram_limit_at(self, slot: int) -> int:
        value = self.vram_limit
        return value if isinstance(value, int) else int(value[slot])


def _ceil_percent(capacity: I64, percent: float) -> I64:
    # Whole milli-TFLOPS, rounded up so a percentage never undershoots what it promises.
    return np.ceil(capacity.astype(np.float64) * (percent / 100.0)).astype(np.int64)


def share_of(capacity: I64, share_milli: int) -> I64:
    """`share_milli` thousandths of each capacity, rounded down: shares summing to 1000 fit exactly."""
    return (capacity * share_milli) // 1000


def per_gpu_tflops(state: AllocatorState, request: GpuRequest) -> tuple[I64 | int, I64 | int]:
    """TFLOPS request and limit: one number, or per slot for a share of each GPU's capacity."""
    if request.dedicated:
        return state.cap_t, state.cap_t
    if request.gpu_share_milli is not None:
        share = share_of(state.cap_t, request.gpu_share_milli)
        return share, share
    if request.compute_percent_request is not None:
        wanted = _ceil_percent(state.cap_t, request.compute_percent_request)
        ceiling = _ceil_percent(state.cap_t, request.compute_percent_limit or request.compute_percent_request)
        return wanted, ceiling
    return request.tflops_request, max(request.tflops_limit, request.tflops_request)


def per_gpu_vram(state: AllocatorState, request: GpuRequest) -> tuple[I64 | int, I64 | int]:
    """VRAM request and limit: one number, or per slot for a dedicated GPU or a share of each GPU."""
    if request.dedicated:
        return state.cap_v, state.cap_v
    if request.gpu_share_milli is not None:
        share = share_of(state.cap_v, request.gpu_share_milli)
        return share, share
    return request.vram_request, max(request.vram_limit, request.vram_request)


def _affinity_mask(state: AllocatorState, constraints: NodeConstraints) -> B:
    """Node-affinity mask per distinct constraint, cached on the state for its current generation."""
    cache = state.affinity_masks
    if cache.get("generation") != state.generation:
        cache.clear()
        cache["generation"] = state.generation
    found = cache.get(constraints)
    if found is None:
        labels = cache.get("labels")  # every node's merged labels, shared by the constraints
        if not isinstance(labels, list):
            labels = cache["labels"] = [state.labels_of(node) for node in state.node_names]
        found = np.fromiter(
            (
                node_constraint_failure(constraints, node, node_labels) is None
                for node, node_labels in zip(state.node_names, labels, strict=True)
            ),
            dtype=np.bool_,
            count=len(state.node_names),
        )
        if len(cache) > 256:
            cache.clear()
            cache["generation"] = state.generation
            cache["labels"] = labels
        cache[constraints] = found
    assert isinstance(found, np.ndarray)
    return found


def _static_mask(state: AllocatorState, request: GpuRequest) -> B:
    """Slots passing pool, phase, model and vendor (flat): fixed until a GPU record changes.

    Cached on the state per (pool, model, vendor) for its current static version, so the
    extender's hot path pays one copy instead of four comparisons over every slot.
    """
    cache = state.static_masks
    version = (state.static_version, state.generation, state.valid.size)
    if cache.get("version") != version:
        cache.clear()
        cache["version"] = version
    key = (request.pool, request.gpu_model or "", request.vendor or "")
    found = cache.get(key)
    if found is None:
        found = state.valid & (state.pool_code == state.codes.get(request.pool, -1)) & state.phase_ok
        if request.gpu_model:
            found &= state.model_code == state.codes.get(request.gpu_model, -1)
        if request.vendor:
            found &= state.vendor_code == state.codes.get(request.vendor, -1)
        if len(cache) > 256:
            cache.clear()
            cache["version"] = version
        cache[key] = found
    assert isinstance(found, np.ndarray)
    return found


def _node_mask(
    state: AllocatorState,
    request: GpuRequest,
    max_worker_per_node: int,
    candidate_rows: npt.NDArray[np.intp] | None,
    quota_failure: str | None,
) -> B:
    """Nodes passing the candidate list, node affinity, nativeGpu, maxWorkerPerNode and quota."""
    ok: B = (state.node_native == 0) & (state.node_workers < max_worker_per_node)
    if candidate_rows is not None:
        chosen = np.zeros(ok.size, dtype=np.bool_)
        chosen[candidate_rows] = True
        ok &= chosen
    if not request.constraints.empty:
        ok &= _affinity_mask(state, request.constraints)
    if quota_failure is not None:
        ok[:] = False
    return ok


def _surviving(
    state: AllocatorState,
    request: GpuRequest,
    outcome: FilterOutcome,
    node_ok: B,
) -> B:
    """Every stage at once, in place over one flat mask: the same slots as the staged path."""
    rows, width = len(state.node_names), state.width
    alive = _static_mask(state, request).copy()
    if request.gpu_indices is not None:
        alive &= np.isin(state.gpu_index, sorted(request.gpu_indices))
    alive &= state.tenancy.compatible(request.isolation, request.dedicated)
    if request.isolation == "partitioned":
        alive &= state.tenancy.partitions
    scratch = np.empty_like(alive)
    for have, wanted in (
        (state.avail_t, outcome.tflops_request),
        (state.avail_v, outcome.vram_request),
        (state.limit_room_t, outcome.tflops_limit),
        (state.limit_room_v, outcome.vram_limit),
    ):
        alive &= np.greater_equal(have, wanted, out=scratch)
    shaped = alive.reshape(rows, width)
    if request.gpu_count > 1:  # nodes' own stages commute with it: a node they drop has no slot left
        node_ok &= row_count(shaped) >= request.gpu_count
    and_rows(shaped, node_ok)
    return shaped


def run_filters(
    state: AllocatorState,
    request: GpuRequest,
    *,
    max_worker_per_node: int,
    candidate_rows: npt.NDArray[np.intp] | None = None,
    quota_failure: str | None = None,
    record: bool = False,
) -> FilterOutcome:
    """Run every stage; `candidate_rows` narrows to some nodes (the extender's NodeNames).

    Without `record` the stages run fused (`_surviving`); with it, one by one, keeping each
    stage's masks for the reasons. Both keep exactly the same slots.
    """
    state.ensure_layout()
    rows, width = len(state.node_names), state.width
    wanted_t, ceiling_t = per_gpu_tflops(state, request)
    wanted_v, ceiling_v = per_gpu_vram(state, request)
    base = state.valid.reshape(rows, width)
    outcome = FilterOutcome(base, wanted_t, ceiling_t, wanted_v, ceiling_v, quota_failure=quota_failure)
    if not record:
        node_ok = _node_mask(state, request, max_worker_per_node, candidate_rows, quota_failure)
        outcome.alive = _surviving(state, request, outcome, node_ok)
        return outcome
    if candidate_rows is not None:
        chosen = np.zeros(rows, dtype=np.bool_)
        chosen[candidate_rows] = True
        outcome.alive = base & chosen[:, None]

    def keep(name: str, mask: B) -> None:
        after = outcome.alive & mask
        outcome.stages.append(StageMasks(name, outcome.alive, after))
        outcome.alive = after

    def shaped(flat: B) -> B:
        return flat.reshape(rows, width)

    keep("pool", shaped(state.pool_code == state.codes.get(request.pool, -1)))
    keep("phase", shaped(state.phase_ok))
    if request.gpu_indices is not None:
        keep("index", shaped(np.isin(state.gpu_index, sorted(request.gpu_indices))))
    keep("isolation", shaped(state.tenancy.compatible(request.isolation, request.dedicated)))
    if request.isolation == "partitioned":
        keep("partition", shaped(state.tenancy.partitions))
    keep("resources", shaped((state.avail_t >= wanted_t) & (state.avail_v >= wanted_v)))
    keep("oversubscription", shaped((state.limit_room_t >= ceiling_t) & (state.limit_room_v >= ceiling_v)))
    if request.gpu_model:
        keep("model", shaped(state.model_code == state.codes.get(request.gpu_model, -1)))
    if request.vendor:
        keep("vendor", shaped(state.vendor_code == state.codes.get(request.vendor, -1)))
    if not request.constraints.empty:
        keep("nodeAffinity", _affinity_mask(state, request.constraints)[:, None])
    keep("nativeGpu", (state.node_native == 0)[:, None])
    if request.gpu_count > 1:
        keep("sameNode", (row_count(outcome.alive) >= request.gpu_count)[:, None])
    keep("maxWorkerPerNode", (state.node_workers < max_worker_per_node)[:, None])
    if quota_failure is not None:
        keep("quota", np.zeros((rows, 1), dtype=np.bool_))
    return outcome
