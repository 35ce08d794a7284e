"""FragmentationAware: cached Δ-fragmentation equals the measure computed by its definition.

The reference below recomputes a node's expected fragmentation from scratch with plain loops
(docs/placement.md) before and after a placement, on random small clusters; the scorer's cached,
vectorised Δ must agree on every slot, after reservations and releases, with and without the
nodes' CPU and memory. Then the mode end to end: selectable per pool, ties deterministic,
prioritize in 0..10, and the request mix's window.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpupool.core.allocator import Allocation, Allocator, GpuInfo, GpuRequest, PlacementMode, PlacementPolicy
from gpupool.core.allocator.mix import RequestMix, RequestShape
from gpupool.core.allocator.state import AllocatorState

GI = 1 << 30
FA = PlacementMode.FRAGMENTATION_AWARE


def _amounts(shape: RequestShape, gpu: GpuInfo) -> tuple[int, int]:
    if shape.dedicated:
        return gpu.tflops_capacity, gpu.vram_capacity
    if shape.share_milli is not None:
        return gpu.tflops_capacity * shape.share_milli // 1000, gpu.vram_capacity * shape.share_milli // 1000
    return shape.tflops, shape.vram


def _node_fragmentation(
    gpus: list[tuple[GpuInfo, int, int]],
    host: tuple[int, int] | None,
    mix: list[tuple[RequestShape, float]],
) -> float:
    """Σ_m weight × (free GPU capacity m cannot use), by definition; gpus: (info, free t, free v)."""
    total = 0.0
    free = [t / g.tflops_capacity for g, t, _ in gpus]
    for shape, weight in mix:
        fits = []
        for (gpu, avail_t, avail_v), _ in zip(gpus, free, strict=True):
            need_t, need_v = _amounts(shape, gpu)
            model_ok = shape.model is None or shape.model == gpu.model
            fits.append(model_ok and avail_t >= need_t and avail_v >= need_v)
        runnable = host is None or (host[0] >= shape.cpu_milli and host[1] >= shape.memory)
        if not runnable or sum(fits) < shape.gpu_count:
            lost = sum(free)
        else:
            lost = sum(f for f, ok in zip(free, fits, strict=True) if not ok)
        total += weight * lost
    return total


def _cluster(seed: int, *, hosts: bool) -> tuple[Allocator, dict[str, tuple[int, int]]]:
    rng = random.Random(seed)
    allocator = Allocator(PlacementPolicy(mode=FA))
    host_room: dict[str, tuple[int, int]] = {}
    for n in range(5):
        model, tflops, vram = rng.choice((("T4", 65_000, 16 * GI), ("A100", 312_000, 80 * GI)))
        for g in range(rng.choice((1, 2, 4, 8))):
            allocator.state.upsert_gpu(
                GpuInfo(f"n{n}-g{g}", f"n{n}", "p", tflops, vram, model=model, index=g)
            )
        if hosts:
            host_room[f"n{n}"] = (rng.choice((4_000, 16_000, 64_000)), rng.choice((8, 32, 128)) * GI)
            allocator.state.set_host_free(f"n{n}", *host_room[f"n{n}"])
    allocator.state.ensure_layout()
    for w in range(12):
        gpu = rng.choice(sorted(allocator.state.gpus))
        info = allocator.state.gpus[gpu]
        share = rng.choice((250, 500, 750))
        allocator.add_allocation(
            Allocation("x", f"w{w}", info.node, (gpu,), (info.tflops_capacity * share // 1000,), (0,), 0, 0)
        )
    return allocator, host_room


def _mix(rng: random.Random, *, hosts: bool) -> list[tuple[RequestShape, float]]:
    shapes = [
        RequestShape(share_milli=500),
        RequestShape(share_milli=250),
        RequestShape(dedicated=True),
        RequestShape(gpu_count=2, dedicated=True),
        RequestShape(tflops=20_000, vram=4 * GI),
        RequestShape(share_milli=1000, model="T4"),
    ]
    if hosts:
        shapes = [
            RequestShape(
                **{**{f: getattr(s, f) for f in s.__slots__}, "cpu_milli": rng.choice((0, 8_000, 32_000))}
            )
            for s in shapes
        ]
    counts = [rng.randint(1, 5) for _ in shapes]
    return [(s, c / sum(counts)) for s, c in zip(shapes, counts, strict=True)]


def _reference_deltas(
    state: AllocatorState,
    request: RequestShape,
    mix: list[tuple[RequestShape, float]],
    hosts: dict[str, tuple[int, int]],
) -> dict[str, float]:
    out: dict[str, float] = {}
    for node in state.node_names:
        names = list(state.gpu_names_on(node))
        before = [
            (state.gpus[n], int(state.avail_t[state.slot_of[n]]), int(state.avail_v[state.slot_of[n]]))
            for n in names
        ]
        host = hosts.get(node)
        after_host = None if host is None else (host[0] - request.cpu_milli, host[1] - request.memory)
        base = _node_fragmentation(before, host, mix)
        for i, name in enumerate(names):
            gpu, avail_t, avail_v = before[i]
            need_t, need_v = _amounts(request, gpu)
            after = list(before)
            after[i] = (gpu, avail_t - need_t, avail_v - need_v)
            if avail_t < need_t or avail_v < need_v:
                continue  # the filters would not let the pod here
            out[name] = _node_fragmentation(after, after_host, mix) - base
    return out


def _scorer_with(allocator: Allocator, mix: list[tuple[RequestShape, float]]) -> None:
    window = RequestMix(window=10_000, refresh_every=1, max_shapes=64)
    for shape, weight in mix:
        for _ in range(round(weight * 1000)):
            window.record(shape)
    allocator.fragmentation.mix = window


@pytest.mark.parametrize("hosts", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_cached_deltas_equal_the_definition(seed: int, hosts: bool) -> None:
    rng = random.Random(seed)
    allocator, host_room = _cluster(seed, hosts=hosts)
    mix = _mix(rng, hosts=hosts)
    _scorer_with(allocator, mix)
    weights = dict(allocator.fragmentation.mix.weights())
    exact_mix = [(s, weights[s]) for s, _ in mix]
    state = allocator.state
    for step in range(4):
        cpu = rng.choice((2_000, 10_000, 40_000)) if hosts else 0  # crosses what mix entries need
        request = RequestShape(share_milli=rng.choice((100, 300, 500)), cpu_milli=cpu)
        got = allocator.fragmentation.deltas(state, request)
        for name, expected in _reference_deltas(state, request, exact_mix, host_room).items():
            assert got[state.slot_of[name]] == pytest.approx(expected, abs=2e-4), (step, name)
        # change the cluster, so the next round reads cached rows refreshed from the journal
        gpu = rng.choice(sorted(state.gpus))
        info = state.gpus[gpu]
        if int(state.avail_t[state.slot_of[gpu]]) >= info.tflops_capacity // 10:
            allocator.add_allocation(
                Allocation("y", f"s{step}", info.node, (gpu,), (info.tflops_capacity // 10,), (0,), 0, 0)
            )
        if step == 2:
            allocator.release("x/w0")


def test_the_mode_places_where_fragmentation_grows_least() -> None:
    """Two half-used GPUs and one free: a half-GPU pod fills a half-used GPU, keeping a whole one."""
    allocator = Allocator(pool_modes={"p": FA})
    for node in ("a", "b"):
        allocator.state.upsert_gpu(GpuInfo(f"{node}-0", node, "p", 100_000, 16 * GI, index=0))
    allocator.state.upsert_gpu(GpuInfo("a-1", "a", "p", 100_000, 16 * GI, index=1))
    allocator.add_allocation(Allocation("x", "half", "a", ("a-1",), (50_000,), (0,), 8 * GI, 0))
    whole = GpuRequest("ns", "whole", "p", gpu_share_milli=1000)
    for _ in range(3):
        allocator.fragmentation.mix.record(RequestShape.of(whole))
    placed = allocator.reserve(GpuRequest("ns", "half", "p", gpu_share_milli=500))
    assert placed.gpus == ("a-1",)
    assert allocator.mode_for("p") is FA
    scores = allocator.prioritize(GpuRequest("ns", "next", "p", gpu_share_milli=1000), ["a", "b"])
    assert set(scores.values()) <= set(range(11))


def test_ties_go_to_the_first_node_and_gpu() -> None:
    allocator = Allocator(PlacementPolicy(mode=FA))
    for node in ("b", "a", "c"):
        for g in range(2):
            allocator.state.upsert_gpu(GpuInfo(f"{node}-{g}", node, "p", 100_000, 16 * GI, index=g))
    first = allocator.reserve(GpuRequest("ns", "one", "p", gpu_share_milli=1000))
    assert (first.node, first.gpus) == ("a", ("a-0",))


def test_the_mix_keeps_a_window_and_the_heaviest_shapes() -> None:
    mix = RequestMix(window=4, refresh_every=1, max_shapes=2)
    small, big, odd = RequestShape(share_milli=100), RequestShape(share_milli=900), RequestShape(tflops=1)
    for shape in (odd, small, small, big, big, big):  # the window forgets `odd` and one `small`
        mix.record(shape)
    weights = dict(mix.weights())
    assert weights == {big: pytest.approx(0.75), small: pytest.approx(0.25)}
    assert sum(weights.values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 1"):
        RequestMix(window=0)


def test_unknown_hosts_leave_only_the_gpu_measure() -> None:
    """Without set_host_free a pod's CPU and memory change nothing."""
    allocator, _ = _cluster(3, hosts=False)
    _scorer_with(allocator, _mix(random.Random(3), hosts=False))
    with_cpu = allocator.fragmentation.deltas(
        allocator.state, RequestShape(share_milli=300, cpu_milli=64_000)
    )
    without = allocator.fragmentation.deltas(allocator.state, RequestShape(share_milli=300))
    assert np.array_equal(with_cpu, without)


def test_a_scheduling_config_template_selects_the_mode_and_keeps_the_default() -> None:
    from gpupool.core.model.scheduling import SchedulingConfigTemplate

    def template(spec: dict[str, object]) -> SchedulingConfigTemplate:
        raw = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "SchedulingConfigTemplate",
            "metadata": {"name": "t"},
        }
        return SchedulingConfigTemplate.model_validate({**raw, "spec": spec})

    chosen = template({"placement": {"mode": "FragmentationAware"}}).spec.placement.mode
    assert PlacementMode(chosen) is FA
    assert template({}).spec.placement.mode == "NodeCompactGPULowLoad"
    assert Allocator(pool_modes={"frag": PlacementMode(chosen)}).mode_for("other") is (
        PlacementMode.NODE_COMPACT_GPU_LOW_LOAD
    )


def test_prioritize_and_simulate_work_before_any_request_was_seen() -> None:
    """An empty mix: every Δ is 0, so the first node (by name) wins and scores are all 10."""
    allocator = Allocator(PlacementPolicy(mode=FA))
    for node in ("b", "a"):
        allocator.state.upsert_gpu(GpuInfo(f"{node}-0", node, "p", 100_000, 16 * GI))
    request = GpuRequest("ns", "first", "p", gpu_share_milli=500)
    assert allocator.prioritize(request, ["a", "b"]) == {"a": 10, "b": 10}
    assert allocator.simulate(request).node == "a"
