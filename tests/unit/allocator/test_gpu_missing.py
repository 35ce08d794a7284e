"""A GPU the node agent marked unusable (`tensor-fusion.ai/gpu-missing-since`) is never placed on,
even while its status still says Running, and the phase stage says why."""

from __future__ import annotations

from typing import Any

from gpupool.core.allocator import GpuRequest
from gpupool.core.allocator.build import gpu_info, gpu_phase, rebuild_allocator
from gpupool.core.model.node import GPU

MISSING = "tensor-fusion.ai/gpu-missing-since"


def gpu_object(name: str, *, annotations: dict[str, str] | None = None) -> GPU:
    body: dict[str, Any] = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPU",
        "metadata": {
            "name": name,
            "labels": {"tensor-fusion.ai/gpupool": "shared"},
            "annotations": annotations or {},
        },
        "status": {
            "phase": "Running",
            "capacity": {"tflops": "100", "vram": "40Gi"},
            "available": {"tflops": "100", "vram": "40Gi"},
            "gpuModel": "A100",
            "vendor": "NVIDIA",
            "nodeSelector": {"kubernetes.io/hostname": "node-a"},
        },
    }
    return GPU.model_validate(body)


def test_phase_reads_the_annotation_first() -> None:
    assert gpu_phase(gpu_object("g0")) == "Running"
    marked = gpu_object("g1", annotations={MISSING: "2026-12-01T02:00:00Z"})
    assert gpu_phase(marked) == "Unusable (missing since 2026-12-01T02:00:00Z)"
    info = gpu_info(marked)
    assert info is not None and info.phase != "Running"


def test_allocator_skips_the_missing_gpu_and_explains() -> None:
    gpus = [gpu_object("g0"), gpu_object("g1", annotations={MISSING: "2026-12-01T02:00:00Z"})]
    allocator, warnings = rebuild_allocator(gpus=gpus, pods=[])
    assert warnings == []
    request = GpuRequest(
        namespace="team", name="p", pool="shared", tflops_request=10_000, vram_request=1 << 30
    )
    assert allocator.simulate(request).gpus == ["g0"]
    two = GpuRequest(namespace="team", name="q", pool="shared", tflops_request=10_000, gpu_count=2)
    simulation = allocator.simulate(two)
    assert simulation.node is None
    phase = next(s for s in simulation.stages if s.stage == "phase")
    assert phase.after == ["g0"] and "missing since" in phase.reasons["g1"]
