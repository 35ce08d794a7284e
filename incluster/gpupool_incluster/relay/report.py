"""JSON views of the allocator for `/api/allocation` and `/api/simulate-schedule`.

Role: turn allocator state and a `Simulation` into plain JSON (TFLOPS as numbers, VRAM as bytes
and as Kubernetes quantity text), the shapes the production guide's curl examples print.

Must not: mutate the allocator or take the lock (callers hold it).
"""

from __future__ import annotations

from typing import Any

from gpupool.core.allocator import Allocator, Simulation
from gpupool.core.allocator.reasons import format_bytes
from gpupool.core.allocator.state import UNBOUNDED
from gpupool.scheduler.admission import Mutation

__all__ = ["allocation_report", "simulation_report"]


def _tflops(milli: int) -> float:
    return milli / 1000


def allocation_report(allocator: Allocator) -> dict[str, Any]:
    state = allocator.state
    state.ensure_layout()
    holders: dict[str, list[str]] = {}
    for allocation in state.allocations.values():
        for name in allocation.gpus:
            holders.setdefault(name, []).append(allocation.key)
    gpus = []
    for name, slot in sorted(state.slot_of.items()):
        info = state.gpus[name]
        limit_cap_t = int(state.limit_cap_t[slot])
        gpus.append(
            {
                "name": name,
                "node": info.node,
                "pool": info.pool,
                "phase": info.phase,
                "model": info.model,
                "vendor": info.vendor,
                "index": info.index,
                "capacity": {"tflops": _tflops(int(state.cap_t[slot])), "vramBytes": int(state.cap_v[slot])},
                "available": {
                    "tflops": _tflops(int(state.avail_t[slot])),
                    "vramBytes": int(state.avail_v[slot]),
                    "vram": format_bytes(int(state.avail_v[slot])),
                },
                "limitsPlaced": {
                    "tflops": _tflops(int(state.limits_t[slot])),
                    "vramBytes": int(state.limits_v[slot]),
                },
                "limitsAllowed": {"tflops": None if limit_cap_t >= UNBOUNDED else _tflops(limit_cap_t)},
                "workers": int(state.workers[slot]),
                "allocations": sorted(holders.get(name, [])),
            }
        )
    nodes = {
        node: {"workers": int(state.node_workers[row]), "nativeGpuPods": int(state.node_native[row])}
        for row, node in enumerate(state.node_names)
    }
    allocations = [
        {
            "pod": a.key,
            "uid": a.uid,
            "node": a.node,
            "gpus": list(a.gpus),
            "tflopsRequests": [_tflops(t) for t in a.tflops_requests],
            "tflopsLimits": [_tflops(t) for t in a.tflops_limits],
            "vramRequestBytes": a.vram_request,
            "vramLimitBytes": a.vram_limit,
            "isolation": a.isolation,
            "dedicated": a.dedicated,
        }
        for a in sorted(state.allocations.values(), key=lambda x: x.key)
    ]
    return {"gpus": gpus, "nodes": nodes, "allocations": allocations}


def simulation_report(mutation: Mutation, simulation: Simulation) -> dict[str, Any]:
    return {
        "node": simulation.node,
        "gpus": simulation.gpus,
        "filterStages": [
            {"stage": s.stage, "before": s.before, "after": s.after, "reasons": s.reasons}
            for s in simulation.stages
        ],
        "scores": simulation.scores,
        "diagnosis": simulation.diagnosis,
        "nodeReasons": simulation.node_reasons,
        "webhookNotes": mutation.notes,
    }
