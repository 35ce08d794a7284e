"""BalancedFit: cached leftovers and stranded GPUs equal the measure computed by its definition.

The reference below recomputes, with plain loops over the state's GPUs (docs/placement.md,
"BalancedFit"), each slot's leftover L before and after one GPU of a request, each node's free
GPUs G and stranded GPUs S, and the lexicographic key (ΔS + ΔL, the node's GPUs, G, CPU left,
order), from a log of the requests it made itself (not the scorer's profile). On random small clusters, after
random reservations, releases and hosts' CPU and memory changes, the scorer's cached values and
its choice must agree — on both ways it computes W (GPU kinds, and shape by shape). Then the
mode end to end: selectable per pool, a CPU-heavy pod kept off a CPU-poor node, leftovers the
mix can use preferred, the smaller node first among equal keys, Best-fit without hosts,
prioritize in 0..10; and the demand profile.
"""

from __future__ import annotations

import contextlib
import math
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
from gpupool.core.allocator.balanced_fit import BalancedFitScorer
from gpupool.core.allocator.demand import DemandProfile, gpus_per_request
from gpupool.core.allocator.mix import RequestShape
from gpupool.core.allocator.state import HOST_UNKNOWN, AllocatorState

GI = 1 << 30
BF = PlacementMode.BALANCED_FIT


def _amounts(shape: RequestShape, cap_t: int, cap_v: int) -> tuple[int, int]:
    if shape.dedicated:
        return cap_t, cap_v
    if shape.share_milli is not None:
        return cap_t * shape.share_milli // 1000, cap_v * shape.share_milli // 1000
    if shape.compute_percent is not None:
        return math.ceil(cap_t * shape.compute_percent / 100), shape.vram
    return shape.tflops, shape.vram


def _weights(log: list[RequestShape]) -> dict[RequestShape, float]:
    """Each GPU shape's share of the GPUs requested (a k-GPU request counts k times)."""
    counts: dict[RequestShape, int] = {}
    for shape in log:
        part = shape.gpu_part()
        counts[part] = counts.get(part, 0) + max(1, part.gpu_count)
    total = sum(counts.values())
    return {shape: count / total for shape, count in counts.items()}


def _leftover(
    state: AllocatorState, slot: int, free_t: int, free_v: int, weights: dict[RequestShape, float]
) -> float:
    cap_t, cap_v = int(state.cap_t[slot]), int(state.cap_v[slot])
    model = state.gpus[state.slot_names[slot]].model
    usable = 0.0
    for shape, weight in weights.items():
        need_t, need_v = _amounts(shape, cap_t, cap_v)
        if (shape.model is None or shape.model == model) and free_t >= need_t and free_v >= need_v:
            usable += weight
    return max(free_t, 0) / cap_t * max(0.0, 1.0 - usable)


def _reference_deltas(
    state: AllocatorState, shape: RequestShape, weights: dict[RequestShape, float]
) -> dict[int, float]:
    out = {}
    for slot in np.flatnonzero(state.valid).tolist():
        free_t, free_v = int(state.avail_t[slot]), int(state.avail_v[slot])
        need_t, need_v = _amounts(shape, int(state.cap_t[slot]), int(state.cap_v[slot]))
        before = _leftover(state, slot, free_t, free_v, weights)
        after = _leftover(state, slot, free_t - need_t, free_v - need_v, weights)
        out[slot] = after - before
    return out


def _reference_choice(
    state: AllocatorState, alive: np.ndarray, shape: RequestShape, log: list[RequestShape]
) -> int | None:
    """The row with the smallest (ΔS + Σ k best ΔL, its GPUs, G, CPU left, row), by definition."""
    weights = _weights(log)
    typical = int(np.median(state.cap_t[state.valid]))
    gpus = sum(gpus_per_request(s, typical) for s in log)
    rho = sum(s.cpu_milli for s in log) / gpus
    mu = sum(s.memory for s in log) / gpus
    deltas = _reference_deltas(state, shape.gpu_part(), weights)
    width, count = state.width, max(1, shape.gpu_count)
    keys = []
    for row, node in enumerate(state.node_names):
        slots = [row * width + c for c in range(width) if alive[row, c]]
        if len(slots) < count:
            continue
        leftovers = sorted(deltas[s] for s in slots)[:count]
        valid = [row * width + c for c in range(width) if state.valid[row * width + c]]
        free = sum(max(int(state.avail_t[s]), 0) / int(state.cap_t[s]) for s in valid)
        stranded = 0.0
        cpu, memory = state.host_free.get(node, (HOST_UNKNOWN, HOST_UNKNOWN))
        if cpu < HOST_UNKNOWN and memory < HOST_UNKNOWN:
            taken = (
                count
                * sum(
                    min(
                        1.0,
                        _amounts(shape, int(state.cap_t[s]), int(state.cap_v[s]))[0] / int(state.cap_t[s]),
                    )
                    for s in valid
                )
                / len(valid)
            )

            def strand(g: float, c: float, m: float) -> float:
                return max(0.0, g - c / rho if rho else 0.0, g - m / mu if mu else 0.0)

            stranded = strand(free - taken, cpu - shape.cpu_milli, memory - shape.memory) - strand(
                free, cpu, memory
            )
        keys.append((round(stranded + sum(leftovers), 6), len(valid), round(free, 6), cpu, row))
    return min(keys)[4] if keys else None


def _allocator(rng: random.Random, *, hosts: bool, max_kinds: int = 32) -> Allocator:
    allocator = Allocator(PlacementPolicy(mode=BF))
    allocator.placers[BF] = BalancedFitScorer(
        DemandProfile(window=30, refresh_every=1, young_step=1), max_kinds=max_kinds
    )
    for n in range(rng.randint(4, 8)):
        model, tflops, vram = rng.choice((("T4", 65_000, 16 * GI), ("A100", 312_000, 80 * GI)))
        for g in range(rng.choice((1, 2, 4))):
            allocator.state.upsert_gpu(
                GpuInfo(f"n{n}-g{g}", f"n{n}", "p", tflops, vram, model=model, index=g)
            )
        if hosts:
            allocator.state.set_host_free(f"n{n}", rng.choice((8_000, 32_000)), rng.choice((16, 64)) * GI)
    allocator.state.ensure_layout()
    return allocator


def _request(rng: random.Random, name: str, *, hosts: bool) -> GpuRequest:
    sizing = rng.choice(("share", "share", "absolute", "dedicated"))
    return GpuRequest(
        "ns",
        name,
        "p",
        gpu_share_milli=rng.choice((100, 250, 470, 810, 1000)) if sizing == "share" else None,
        tflops_request=rng.choice((10_000, 40_000)) if sizing == "absolute" else 0,
        vram_request=rng.choice((2, 8)) * GI if sizing == "absolute" else 0,
        dedicated=sizing == "dedicated",
        gpu_count=rng.choice((1, 1, 1, 2)),
        gpu_model=rng.choice((None, None, "T4")),
        cpu_milli=rng.choice((0, 2_000, 6_000)) if hosts else 0,
        memory=rng.choice((0, 4 * GI)) if hosts else 0,
    )


@pytest.mark.parametrize(
    ("seed", "hosts", "max_kinds"), [(s, h, k) for s in range(8) for h in (False, True) for k in (32, 0)]
)
def test_cached_leftovers_and_choices_follow_the_definition(seed: int, hosts: bool, max_kinds: int) -> None:
    rng = random.Random(seed)
    allocator = _allocator(rng, hosts=hosts, max_kinds=max_kinds)
    log: list[RequestShape] = []
    held: list[str] = []
    for step in range(40):
        request = _request(rng, f"p{step}", hosts=hosts)
        shape = RequestShape.of(request)
        log = [*log, shape][-30:]
        outcome, _ = allocator._filter(request, None, record=False)
        allocator.balanced.profile.record(shape)
        expected_row = _reference_choice(allocator.state, outcome.alive, shape, log)
        choice = allocator.balanced.choose(allocator.state, outcome.alive, shape)
        assert (choice[0] if choice else None) == expected_row, f"step {step}"
        expected = _reference_deltas(allocator.state, shape.gpu_part(), _weights(log))
        got = allocator.balanced.leftover_deltas(allocator.state, shape)
        for slot, value in expected.items():
            assert got[slot] == pytest.approx(value, abs=1e-9), f"step {step}, slot {slot}"
        with contextlib.suppress(AllocationError):
            held.append(allocator.reserve(request).key)
        log.append(shape)  # reserve recorded it again
        log = log[-30:]
        if held and rng.random() < 0.3:
            allocator.release(held.pop(rng.randrange(len(held))))
        if hosts and rng.random() < 0.3:
            node = rng.choice(allocator.state.node_names)
            allocator.state.set_host_free(node, rng.randrange(0, 40_000), rng.randrange(0, 80) * GI)


def _cluster(hosts: dict[str, tuple[int, int]] | None = None, gpus: int = 4) -> Allocator:
    allocator = Allocator(PlacementPolicy(mode=BF))
    allocator.placers[BF] = BalancedFitScorer(DemandProfile(refresh_every=1, young_step=1))
    for node in ("a", "b", "c"):
        for g in range(gpus):
            allocator.state.upsert_gpu(
                GpuInfo(f"{node}-{g}", node, "p", 100_000, 16 * GI, model="T4", index=g)
            )
    for node, (cpu, memory) in (hosts or {}).items():
        allocator.state.set_host_free(node, cpu, memory)
    return allocator


def test_a_cpu_heavy_pod_goes_where_cpu_is_to_spare_and_a_light_one_where_it_is_short() -> None:
    # Every node has 4 free GPUs; a and b have 12 CPU (3 per free GPU), c has 64.
    hosts = {"a": (12_000, 64 * GI), "b": (12_000, 64 * GI), "c": (64_000, 64 * GI)}
    allocator = _cluster(hosts)
    for _ in range(3):  # the demand: a GPU of work brings 3 CPU
        allocator.balanced.profile.record(RequestShape(share_milli=1000, cpu_milli=3_000))
    heavy = allocator.reserve(GpuRequest("ns", "heavy", "p", gpu_share_milli=1000, cpu_milli=9_000))
    assert heavy.node == "c"  # on a or b it would strand 2 GPUs
    # Now a GPU of work brings 4.5 CPU (18 over 4 GPUs): a and b strand 4 − 12/4.5 GPUs each; a pod
    # with 3 CPU per GPU lowers that on a (the first of the two), where Best-fit would take c.
    light = allocator.reserve(GpuRequest("ns", "light", "p", gpu_share_milli=1000, cpu_milli=3_000))
    assert light.node == "a"


def test_without_hosts_it_is_best_fit_with_leftovers_the_mix_can_use() -> None:
    allocator = _cluster()
    allocator.reserve(GpuRequest("ns", "x", "p", gpu_share_milli=600), node="b")
    allocator.reserve(GpuRequest("ns", "y", "p", gpu_share_milli=200), node="c")
    for i in range(20):  # the mix asks 400 and 200 milli
        allocator.balanced.profile.record(RequestShape(share_milli=400 if i % 2 else 200))
    placed = allocator.reserve(GpuRequest("ns", "z", "p", gpu_share_milli=400))
    # b-0 (400 free) would be filled exactly; c-0 (800 free) would keep 400, which the mix uses.
    assert (placed.node, placed.gpus) == ("b", ("b-0",))
    scores = allocator.prioritize(GpuRequest("ns", "w", "p", gpu_share_milli=400), ["a", "b", "c"])
    assert set(scores) == {"a", "b", "c"} and all(0 <= s <= 10 for s in scores.values())
    # b-1 and c-0 both keep what the mix uses (600, 400 free after): Best-fit then, b before c before a.
    assert scores["b"] == 10 and scores["b"] > scores["c"] > scores["a"]


def test_among_equal_keys_the_smaller_node_goes_first() -> None:
    allocator = Allocator(PlacementPolicy(mode=BF))
    allocator.placers[BF] = BalancedFitScorer(DemandProfile(refresh_every=1, young_step=1))
    for node, gpus in (("big", 8), ("small", 2)):
        for g in range(gpus):
            allocator.state.upsert_gpu(GpuInfo(f"{node}-{g}", node, "p", 100_000, 16 * GI, index=g))
    for g in range(7):  # big keeps one free GPU, small two: Best-fit alone would pick big
        allocator.reserve(GpuRequest("ns", f"w{g}", "p", gpu_share_milli=1000), node="big")
    scores = allocator.prioritize(GpuRequest("ns", "q", "p", gpu_share_milli=1000), ["big", "small"])
    placed = allocator.reserve(GpuRequest("ns", "p", "p", gpu_share_milli=1000))
    # Whole GPUs: ΔL is 0 on both and no host is known (ΔS 0); the 2-GPU node goes first.
    assert placed.node == "small"
    assert scores == {"small": 10, "big": 0}
    # One free GPU left on each: small, with fewer GPUs, still goes first; then big.
    assert allocator.reserve(GpuRequest("ns", "r", "p", gpu_share_milli=1000)).node == "small"
    assert allocator.reserve(GpuRequest("ns", "s", "p", gpu_share_milli=1000)).node == "big"


def test_the_mode_is_selectable_per_pool_and_deterministic() -> None:
    def run() -> list[str]:
        allocator = Allocator(pool_modes={"p": BF})
        for node in ("a", "b"):
            for g in range(2):
                allocator.state.upsert_gpu(GpuInfo(f"{node}-{g}", node, "p", 100_000, 16 * GI, index=g))
        return [
            allocator.reserve(GpuRequest("ns", f"p{i}", "p", gpu_share_milli=300)).gpus[0] for i in range(6)
        ]

    assert run() == run()
    assert Allocator(pool_modes={"p": BF}).mode_for("p") is BF
    assert PlacementMode("BalancedFit") is BF


def test_a_pod_without_gpus_is_kept_where_it_strands_nothing() -> None:
    hosts = {"a": (10_000, 64 * GI), "b": (40_000, 64 * GI), "c": (10_000, 64 * GI)}
    allocator = _cluster(hosts)
    allocator.reserve(
        GpuRequest("ns", "x", "p", gpu_share_milli=1000, gpu_count=4, cpu_milli=2_000), node="c"
    )
    for _ in range(4):
        allocator.balanced.profile.record(RequestShape(share_milli=1000, cpu_milli=2_000))
    stranded, free = allocator.balanced.host_only_keys(allocator.state, 8_000, GI)
    rows = {name: i for i, name in enumerate(allocator.state.node_names)}
    assert stranded[rows["a"]] > 0  # a: 4 free GPUs need 8 CPU; 2 would be left
    assert stranded[rows["b"]] == 0 and stranded[rows["c"]] == 0  # b has CPU to spare; c no free GPU
    assert free[rows["c"]] == 0 and free[rows["a"]] == 4


def test_demand_profile_window_weights_and_refresh() -> None:
    profile = DemandProfile(window=4, refresh_every=3, young_step=1)
    assert profile.demand(100_000) is None
    for share, cpu in ((500, 1_000), (500, 1_000), (1000, 4_000)):
        profile.record(RequestShape(share_milli=share, cpu_milli=cpu, memory=GI))
    demand = profile.demand(100_000)
    assert demand is not None
    assert demand.cpu_per_gpu == pytest.approx(6_000 / 2.0)  # 2 GPUs requested: 0.5 + 0.5 + 1
    assert dict(zip(demand.shapes, demand.weights.tolist(), strict=True)) == {
        RequestShape(share_milli=500): pytest.approx(2 / 3),
        RequestShape(share_milli=1000): pytest.approx(1 / 3),
    }
    for _ in range(3):
        profile.record(RequestShape(share_milli=250, gpu_count=2))
    later = profile.demand(100_000)
    assert later is not None and later.version == demand.version + 1
    assert len(profile) == 4  # the window forgot the oldest three
    assert later.shapes == (RequestShape(share_milli=250, gpu_count=2), RequestShape(share_milli=1000))
    assert gpus_per_request(RequestShape(tflops=50_000), 100_000) == 0.5
    with pytest.raises(ValueError, match="at least 1"):
        DemandProfile(window=0)


def test_the_change_log_serves_any_number_of_readers() -> None:
    allocator = _cluster(gpus=2)
    state = allocator.state
    state.ensure_layout()
    start = state.change_position
    assert state.changes_since(start) == []
    placed = allocator.reserve(GpuRequest("ns", "x", "p", gpu_share_milli=300), node="b")
    slot = state.slot_of[placed.gpus[0]]
    assert state.changes_since(start) == [slot]
    middle = state.change_position
    allocator.release(placed.key)
    assert state.changes_since(start) == [slot, slot] and state.changes_since(middle) == [slot]
    assert state.take_changed_slots() is not None  # FragmentationAware's journal drains on its own
    assert state.changes_since(start) == [slot, slot]
    state.upsert_gpu(GpuInfo("d-0", "d", "p", 100_000, 16 * GI, index=0))  # a new layout: read all again
    state.ensure_layout()
    assert state.changes_since(start) is None and state.changes_since(state.change_position) == []
