"""GPU shares in thousandths (the simulator's `gpu_milli`), and the simulator's baseline rules."""

from __future__ import annotations

import numpy as np
import pytest

from gpupool.core.allocator import AllocationError, Allocator, GpuInfo, GpuRequest
from gpupool.simulation.placement.baselines import BestFit, RandomFit

GI = 1 << 30


def _allocator(nodes: dict[str, int], vram: int = 17_179_869_184) -> Allocator:
    allocator = Allocator()
    for node, gpus in nodes.items():
        for g in range(gpus):
            allocator.state.upsert_gpu(GpuInfo(f"{node}-{g}", node, "p", 65_000, vram, model="T4", index=g))
    return allocator


def test_shares_summing_to_a_whole_gpu_fill_it_exactly() -> None:
    """16 GiB is not a multiple of 1000 bytes: shares round down, so 10 × 100 still fit one GPU."""
    allocator = _allocator({"a": 1})
    held = [allocator.reserve(GpuRequest("ns", f"p{i}", "p", gpu_share_milli=100)) for i in range(10)]
    assert {a.gpus for a in held} == {("a-0",)}
    assert held[0].vram_request == 17_179_869_184 * 100 // 1000
    assert int(allocator.state.avail_t[0]) == 0
    with pytest.raises(AllocationError, match="no node can take"):
        allocator.reserve(GpuRequest("ns", "one-more", "p", gpu_share_milli=1))


def test_a_share_is_of_each_gpus_own_capacity() -> None:
    allocator = Allocator()
    allocator.state.upsert_gpu(GpuInfo("small", "a", "p", 10_000, 8 * GI))
    allocator.state.upsert_gpu(GpuInfo("big", "b", "p", 100_000, 80 * GI))
    on_small = allocator.reserve(GpuRequest("ns", "x", "p", gpu_share_milli=500), node="a")
    on_big = allocator.reserve(GpuRequest("ns", "y", "p", gpu_share_milli=500), node="b")
    assert (on_small.tflops_requests, on_small.vram_request) == ((5_000,), 4 * GI)
    assert (on_big.tflops_requests, on_big.vram_request) == ((50_000,), 40 * GI)


def test_among_narrows_the_candidates_and_refuses_when_none_fit() -> None:
    allocator = _allocator({"a": 1, "b": 1})
    placed = allocator.reserve(GpuRequest("ns", "x", "p", gpu_share_milli=300), among=["b"])
    assert placed.node == "b"
    with pytest.raises(AllocationError):
        allocator.reserve(GpuRequest("ns", "y", "p", gpu_share_milli=300), among=[])
    with pytest.raises(ValueError, match="either node or among"):
        allocator.reserve(GpuRequest("ns", "z", "p", gpu_share_milli=300), node="a", among=["a"])


def test_best_fit_takes_the_tightest_node_then_gpu() -> None:
    allocator = _allocator({"a": 2, "b": 2, "c": 2})
    allocator.reserve(GpuRequest("ns", "b1", "p", gpu_share_milli=600), node="b")
    allocator.reserve(GpuRequest("ns", "c1", "p", gpu_share_milli=300), node="c")
    placed = allocator.reserve(GpuRequest("ns", "x", "p", gpu_share_milli=400), chooser=BestFit())
    assert (placed.node, placed.gpus) == ("b", ("b-0",))  # b has 1.4 GPUs free, the least; b-0 is 0.4 free


def test_random_fit_is_seeded_and_stays_feasible() -> None:
    def run(seed: int) -> list[tuple[str, tuple[str, ...]]]:
        allocator = _allocator({f"n{i}": 2 for i in range(12)})
        chooser = RandomFit(seed)
        out = []
        for i in range(10):
            a = allocator.reserve(
                GpuRequest("ns", f"p{i}", "p", gpu_share_milli=500, gpu_count=1 + i % 2), chooser=chooser
            )
            out.append((a.node, a.gpus))
        assert np.all(allocator.state.avail_t >= 0)
        return out

    assert run(3) == run(3)
    assert len({node for node, _ in run(3)}) > 1
