"""FragmentationAware's caches agree with a scorer that computes everything afresh.

The scorer keeps Δ rows per request shape, the nodes' GPU-only terms (`GpuBefore`), 1/capacity
per slot and the mix's shape order between decisions, refreshed from the state's change journal.
After random reservations, releases, hosts' CPU and memory changes, new request shapes and mix
refreshes, every Δ it returns (per slot, and per node for a pod without GPUs) must equal what a
fresh scorer — no cache, same mix — computes on the same state; and a fresh allocator replaying
the same operations must make the same choices.
"""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest

from gpupool.core.allocator import (
    AllocationError,
    Allocator,
    GpuInfo,
    GpuRequest,
    PlacementMode,
    PlacementPolicy,
)
from gpupool.core.allocator.fragmentation import FragmentationScorer
from gpupool.core.allocator.mix import RequestMix, RequestShape

GI = 1 << 30
FA = PlacementMode.FRAGMENTATION_AWARE


def _allocator(rng: random.Random, *, hosts: bool) -> Allocator:
    allocator = Allocator(PlacementPolicy(mode=FA))
    allocator.placers[FA] = FragmentationScorer(RequestMix(window=40, refresh_every=7, max_shapes=5))
    for n in range(rng.randint(4, 9)):
        model, tflops, vram = rng.choice((("T4", 65_000, 16 * GI), ("A100", 312_000, 80 * GI)))
        for g in range(rng.choice((1, 2, 4, 8))):
            allocator.state.upsert_gpu(
                GpuInfo(f"n{n}-g{g}", f"n{n}", "p", tflops, vram, model=model, index=g)
            )
        if hosts:
            allocator.state.set_host_free(f"n{n}", rng.choice((8_000, 32_000)), rng.choice((16, 64)) * GI)
    allocator.state.ensure_layout()
    return allocator


def _request(rng: random.Random, name: str, *, hosts: bool) -> GpuRequest:
    return GpuRequest(
        "ns",
        name,
        "p",
        gpu_share_milli=rng.choice((100, 250, 500, 1000)),
        gpu_count=rng.choice((1, 1, 1, 2)),
        gpu_model=rng.choice((None, None, "T4")),
        cpu_milli=rng.choice((0, 2_000, 6_000)) if hosts else 0,
        memory=rng.choice((0, 4 * GI)) if hosts else 0,
    )


def _fresh(allocator: Allocator) -> FragmentationScorer:
    """A scorer with nothing cached, reading the same (already refreshed) mix."""
    return FragmentationScorer(allocator.fragmentation.mix)


@pytest.mark.parametrize("hosts", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_cached_deltas_equal_a_fresh_computation(seed: int, hosts: bool) -> None:
    rng = random.Random(seed)
    allocator = _allocator(rng, hosts=hosts)
    state = allocator.state
    held: list[str] = []
    for step in range(60):
        request = _request(rng, f"pod-{step}", hosts=hosts)
        shape = RequestShape.of(request)
        allocator.fragmentation.mix.record(shape)
        cached = allocator.fragmentation.deltas(state, shape).copy()
        assert np.array_equal(cached, _fresh(allocator).deltas(state, shape)), (seed, step)
        if hosts:
            cpu_only = RequestShape(gpu_count=0, cpu_milli=4_000, memory=2 * GI)
            by_node = allocator.fragmentation.node_deltas_without_gpu(state, cpu_only)
            assert np.array_equal(by_node, _fresh(allocator).node_deltas_without_gpu(state, cpu_only))
        action = rng.random()
        if action < 0.6:
            with contextlib.suppress(AllocationError):  # a full cluster refuses; caches must still agree
                held.append(allocator.reserve(request).key)
        elif action < 0.8 and held:
            allocator.release(held.pop(rng.randrange(len(held))))
        elif hosts:
            node = rng.choice(state.node_names)
            state.set_host_free(node, rng.choice((1_000, 8_000, 32_000)), rng.choice((2, 16, 64)) * GI)


@pytest.mark.parametrize("hosts", [False, True])
def test_choices_do_not_depend_on_what_was_cached(hosts: bool) -> None:
    """One allocator decides with warm caches; a second drops its caches before every decision."""
    warm, cold = _allocator(random.Random(9), hosts=hosts), _allocator(random.Random(9), hosts=hosts)
    rng = random.Random(10)
    for step in range(80):
        request = _request(rng, f"pod-{step}", hosts=hosts)
        cold.placers[FA] = FragmentationScorer(cold.fragmentation.mix)
        outcomes = []
        for allocator in (warm, cold):
            try:
                placed = allocator.reserve(request)
                outcomes.append((placed.node, placed.gpus))
            except AllocationError:  # both must refuse alike
                outcomes.append(("refused", ()))
        assert outcomes[0] == outcomes[1], step


def test_a_node_short_of_surviving_slots_never_wins() -> None:
    """Scoring a 2-GPU pod over a mask where one node keeps a single slot: that node is out."""
    allocator = _allocator(random.Random(4), hosts=False)
    state = allocator.state
    shape = RequestShape(share_milli=500, gpu_count=2)
    alive = state.valid.reshape(len(state.node_names), state.width).copy()
    alive[0] = False
    alive[0, 0] = True  # node 0: one surviving slot, fewer than the pod needs
    scores = allocator.fragmentation.node_scores(state, alive, shape)
    assert np.isnan(scores[0])
    choice = allocator.fragmentation.choose(state, alive, shape)
    assert choice is not None and choice[0] != 0
