"""GPU shares in thousandths (the simulator's `gpu_milli`), `among`, and a chooser replacing the mode.

(The simulator's baseline rules have their own tests in tests/unit/simulation/placement/test_baselines.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

from gpupool.core.allocator import AllocationError, Allocator, GpuInfo, GpuRequest
from gpupool.core.allocator.state import AllocatorState

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


def test_a_chooser_replaces_the_modes_choice_among_the_surviving_slots() -> None:
    allocator = _allocator({"a": 2, "b": 2})
    allocator.reserve(GpuRequest("ns", "full", "p", gpu_share_milli=1000), node="b")
    seen: list[np.ndarray] = []

    def last_surviving(
        state: AllocatorState, alive: np.ndarray, request: GpuRequest
    ) -> tuple[int, list[int]]:
        seen.append(alive.copy())
        slot = int(np.flatnonzero(alive.ravel())[-1])
        return slot // alive.shape[1], [slot]

    placed = allocator.reserve(GpuRequest("ns", "x", "p", gpu_share_milli=600), chooser=last_surviving)
    assert (placed.node, placed.gpus) == ("b", ("b-1",))  # b-0 is full: the filters removed it
    assert seen[0].sum() == 3
    with pytest.raises(AllocationError, match="no node can take"):
        allocator.reserve(GpuRequest("ns", "y", "p", gpu_share_milli=100), chooser=lambda *_: None)
    assert np.all(allocator.state.avail_t >= 0)
