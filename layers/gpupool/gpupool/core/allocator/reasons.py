"""Human-readable reasons for candidates the filter stages removed.

Role: turn recorded stage masks into `{candidate: reason}` — per GPU for GPU-level stages, per
node for node-level ones — and into one reason per node (the stage where it lost its last
candidate), which is what the extender's FailedNodes and simulate-schedule's diagnosis show.

Must not: filter, score or mutate state.
"""

from __future__ import annotations

import numpy as np

from gpupool.core.allocator.affinity import node_constraint_failure
from gpupool.core.allocator.filters import FilterOutcome, StageMasks
from gpupool.core.allocator.request import GpuRequest
from gpupool.core.allocator.rows import row_any
from gpupool.core.allocator.state import AllocatorState
from gpupool.core.allocator.tenancy import isolation_reason, partition_reason

__all__ = ["format_bytes", "format_tflops", "gpu_reason", "node_reasons", "stage_reasons"]

NODE_STAGES = frozenset({"nodeAffinity", "nativeGpu", "sameNode", "maxWorkerPerNode", "quota"})


def format_tflops(milli: int) -> str:
    return f"{milli / 1000:g} TFLOPS"


def format_bytes(count: int) -> str:
    for suffix, power in (("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if abs(count) >= 1 << power:
            return f"{count / (1 << power):.4g}{suffix}"
    return f"{count}B"


def gpu_reason(
    state: AllocatorState, request: GpuRequest, outcome: FilterOutcome, stage: str, slot: int
) -> str:
    """Why one GPU slot failed a GPU-level stage."""
    gpu = state.gpus[state.slot_names[slot]]
    if stage == "pool":
        return f"GPU is in pool {gpu.pool!r}, the pod asks for pool {request.pool!r}"
    if stage == "phase":
        return f"GPU phase is {gpu.phase or 'unknown'}, not Running"
    if stage == "index":
        return f"GPU index {gpu.index} is not among the requested indices {sorted(request.gpu_indices or ())}"
    if stage == "isolation":
        return isolation_reason(state.tenancy, gpu, slot, request.isolation, request.dedicated)
    if stage == "partition":
        return partition_reason(gpu)
    if stage == "resources":
        return (
            f"free {format_tflops(int(state.avail_t[slot]))} / {format_bytes(int(state.avail_v[slot]))} VRAM "
            f"< requested {format_tflops(outcome.request_at(slot))} / "
            f"{format_bytes(outcome.vram_at(slot))} VRAM"
        )
    if stage == "oversubscription":
        vram_limits = int(state.limits_v[slot]) + outcome.vram_limit_at(slot)
        return (
            f"limits would reach {format_tflops(int(state.limits_t[slot]) + outcome.limit_at(slot))} / "
            f"{format_bytes(vram_limits)} VRAM, "
            f"the pool's oversubscription allows {format_tflops(int(state.limit_cap_t[slot]))} / "
            f"{format_bytes(int(state.limit_cap_v[slot]))}"
        )
    if stage == "model":
        return f"GPU model is {gpu.model or 'unknown'!r}, the pod asks for {request.gpu_model!r}"
    if stage == "vendor":
        return f"GPU vendor is {gpu.vendor or 'unknown'!r}, the pod asks for {request.vendor!r}"
    return stage


def _node_reason(
    state: AllocatorState, request: GpuRequest, outcome: FilterOutcome, stage: str, row: int
) -> str:
    node = state.node_names[row]
    if stage == "nodeAffinity":
        why = node_constraint_failure(request.constraints, node, state.labels_of(node))
        return why or "node affinity not satisfied"
    if stage == "nativeGpu":
        return (
            f"node runs {int(state.node_native[row])} pod(s) holding native nvidia.com/gpu; "
            "TensorFusion does not allocate GPUs the device plugin handed out (progressive migration)"
        )
    if stage == "sameNode":
        return f"{request.gpu_count} GPUs are requested on one node; fewer fit on this node"
    if stage == "maxWorkerPerNode":
        return f"node already runs {int(state.node_workers[row])} workers, maxWorkerPerNode reached"
    if stage == "quota":
        return outcome.quota_failure or "namespace GPU quota exceeded"
    return stage


def stage_reasons(
    state: AllocatorState, request: GpuRequest, outcome: FilterOutcome, stage: StageMasks
) -> dict[str, str]:
    """`{candidate: reason}` for one stage: GPU names, or node names for node-level stages."""
    if stage.name in NODE_STAGES:
        lost_rows = np.nonzero(row_any(stage.before) & ~row_any(stage.after))[0]
        return {
            state.node_names[r]: _node_reason(state, request, outcome, stage.name, int(r)) for r in lost_rows
        }
    lost = np.nonzero((stage.before & ~stage.after).ravel())[0]
    return {state.slot_names[s]: gpu_reason(state, request, outcome, stage.name, int(s)) for s in lost}


def node_reasons(state: AllocatorState, request: GpuRequest, outcome: FilterOutcome) -> dict[str, str]:
    """One reason per node that lost all its candidates: `stage: reason` of the stage that did it."""
    result: dict[str, str] = {}
    width = state.width
    for stage in outcome.stages:
        lost_rows = np.nonzero(row_any(stage.before) & ~row_any(stage.after))[0]
        for row in lost_rows.tolist():
            node = state.node_names[row]
            if stage.name in NODE_STAGES:
                result[node] = f"{stage.name}: {_node_reason(state, request, outcome, stage.name, row)}"
                continue
            removed = np.nonzero(stage.before[row])[0]
            first = row * width + int(removed[0])
            detail = gpu_reason(state, request, outcome, stage.name, first)
            more = f" (and {removed.size - 1} more GPU(s))" if removed.size > 1 else ""
            result[node] = f"{stage.name}: {state.slot_names[first]}: {detail}{more}"
    return result
