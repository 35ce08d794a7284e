"""The fused filter path (no stage masks kept) keeps exactly the slots the staged path keeps.

`run_filters` runs the stages fused, over cached static masks and the state's limit room, when
the caller does not want reasons; with `record` it runs them one by one. Random clusters (pools,
phases, models, vendors, isolation, partitions, oversubscription, native-GPU nodes, labels),
random allocations, releases and GPUs changing phase or model in place, and random requests
(every sizing, candidate lists, affinity, quota failures, GPU indices) must give the same
surviving slots both ways.
"""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from gpupool.core.allocator import (
    Allocation,
    Allocator,
    GpuInfo,
    GpuRequest,
    NodeConstraints,
    Oversubscription,
    PlacementPolicy,
)
from gpupool.core.allocator.filters import run_filters

GI = 1 << 30


def _cluster(rng: random.Random) -> Allocator:
    allocator = Allocator(PlacementPolicy(max_worker_per_node=rng.choice((3, 8, 64))))
    allocator.state.set_oversubscription("over", Oversubscription(tflops_oversell_ratio=150))
    for n in range(rng.randint(3, 9)):
        node = f"node-{n}"
        for g in range(rng.randint(1, 10)):
            allocator.state.upsert_gpu(
                GpuInfo(
                    name=f"{node}-gpu-{g}",
                    node=node,
                    pool=rng.choice(("shared", "shared", "over", "other")),
                    tflops_capacity=rng.choice((100_000, 312_000)),
                    vram_capacity=rng.choice((16, 80)) * GI,
                    phase=rng.choice(("Running", "Running", "Running", "Pending")),
                    model=rng.choice(("A100", "T4")),
                    vendor=rng.choice(("NVIDIA", "NVIDIA", "AMD")),
                    index=g,
                    node_labels=(("zone", f"z{n % 2}"),),
                    isolation_mode=rng.choice(("", "", "", "hard", "partitioned")),
                )
            )
        if rng.random() < 0.15:
            allocator.state.set_native_gpu_pods(node, 1)
    allocator.state.ensure_layout()
    return allocator


def _request(rng: random.Random, name: str) -> GpuRequest:
    sizing = rng.randrange(4)
    return GpuRequest(
        namespace="team",
        name=name,
        pool=rng.choice(("shared", "shared", "shared", "over", "other", "missing")),
        tflops_request=rng.choice((5_000, 50_000, 200_000)),
        tflops_limit=rng.choice((5_000, 100_000, 400_000)),
        vram_request=rng.choice((1, 8, 40)) * GI,
        vram_limit=rng.choice((1, 16, 60)) * GI,
        compute_percent_request=rng.choice((10.0, 60.0)) if sizing == 1 else None,
        gpu_share_milli=rng.choice((100, 500, 1000)) if sizing == 2 else None,
        dedicated=sizing == 3 and rng.random() < 0.5,
        gpu_count=rng.choice((1, 2, 3)),
        gpu_model=rng.choice((None, None, None, "A100", "T4")),
        vendor=rng.choice((None, None, "NVIDIA", "AMD")),
        gpu_indices=frozenset({0, 1}) if rng.random() < 0.1 else None,
        isolation=rng.choice(("soft", "soft", "soft", "shared", "hard", "partitioned")),
        constraints=NodeConstraints(node_selector=(("zone", "z1"),) if rng.random() < 0.2 else ()),
    )


@pytest.mark.parametrize("seed", range(12))
def test_fused_and_staged_filters_keep_the_same_slots(seed: int) -> None:
    rng = random.Random(seed)
    allocator = _cluster(rng)
    state = allocator.state
    held: list[str] = []
    for step in range(120):
        request = _request(rng, f"pod-{step}")
        rows = None
        if rng.random() < 0.3:
            rows = np.array(sorted(rng.sample(range(len(state.node_names)), 2)), dtype=np.intp)
        quota = "over quota" if rng.random() < 0.05 else None
        workers = allocator.policy.max_worker_per_node
        kwargs = {"max_worker_per_node": workers, "candidate_rows": rows, "quota_failure": quota}
        fused = run_filters(state, request, record=False, **kwargs)  # type: ignore[arg-type]
        staged = run_filters(state, request, record=True, **kwargs)  # type: ignore[arg-type]
        assert np.array_equal(fused.alive, staged.alive), f"seed {seed} step {step}: {request}"
        assert np.array_equal(staged.alive, staged.stages[-1].after)
        if fused.alive.any() and rng.random() < 0.8:
            held.append(allocator.reserve(request).key)
        if held and rng.random() < 0.3:
            allocator.release(held.pop(rng.randrange(len(held))))
        if rng.random() < 0.1:  # a GPU changes phase or model in place: the cached masks must follow
            info = state.gpus[rng.choice(sorted(state.gpus))]
            phase = "Pending" if info.phase == "Running" else "Running"
            state.upsert_gpu(replace(info, phase=phase, model=rng.choice(("A100", "T4"))))


def test_limit_room_follows_caps_and_limits() -> None:
    rng = random.Random(3)
    allocator = _cluster(rng)
    state = allocator.state
    node = state.node_names[0]
    gpu = state.gpu_names_on(node)[0]
    allocator.add_allocation(
        Allocation(
            namespace="t",
            name="held",
            node=node,
            gpus=(gpu,),
            tflops_requests=(1_000,),
            tflops_limits=(7_000,),
            vram_request=GI,
            vram_limit=3 * GI,
        )
    )
    for _ in range(2):
        assert np.array_equal(state.limit_room_t, state.limit_cap_t - state.limits_t)
        assert np.array_equal(state.limit_room_v, state.limit_cap_v - state.limits_v)
        state.set_oversubscription("shared", Oversubscription(tflops_oversell_ratio=200))
        state.ensure_layout()
    allocator.release("t/held")
    assert np.array_equal(state.limit_room_t, state.limit_cap_t - state.limits_t)
    assert np.array_equal(state.limit_room_v, state.limit_cap_v - state.limits_v)
