"""Allocator filter stages: each stage removes exactly the candidates it should, with a reason."""

from __future__ import annotations

import pytest

from gpupool.core.allocator import (
    Allocator,
    GpuInfo,
    GpuRequest,
    MatchExpression,
    NodeConstraints,
    NodeSelectorTerm,
    Oversubscription,
    PlacementPolicy,
    QuotaLimits,
)

GI = 1 << 30


def gpu(name: str, node: str, **overrides: object) -> GpuInfo:
    fields: dict[str, object] = {
        "name": name,
        "node": node,
        "pool": "shared",
        "tflops_capacity": 100_000,
        "vram_capacity": 40 * GI,
        "model": "A100",
        "vendor": "NVIDIA",
        "index": int(name[-1]) if name[-1].isdigit() else 0,
    }
    fields.update(overrides)
    return GpuInfo(**fields)  # type: ignore[arg-type]


def request(**overrides: object) -> GpuRequest:
    fields: dict[str, object] = {
        "namespace": "team",
        "name": "pod",
        "pool": "shared",
        "tflops_request": 10_000,
        "tflops_limit": 10_000,
        "vram_request": 4 * GI,
        "vram_limit": 4 * GI,
    }
    fields.update(overrides)
    return GpuRequest(**fields)  # type: ignore[arg-type]


def allocator_with(*gpus: GpuInfo, policy: PlacementPolicy | None = None) -> Allocator:
    allocator = Allocator(policy)
    for info in gpus:
        allocator.state.upsert_gpu(info)
    return allocator


def removed_by(allocator: Allocator, req: GpuRequest, stage: str) -> dict[str, str]:
    simulation = allocator.simulate(req)
    return next((s.reasons for s in simulation.stages if s.stage == stage), {})


CASES = [
    ("pool", gpu("b-0", "b", pool="other"), request(), "pool 'other'"),
    ("phase", gpu("b-0", "b", phase="Pending"), request(), "phase is Pending"),
    ("index", gpu("b-3", "b"), request(gpu_indices=frozenset({0})), "index 3"),
    ("resources", gpu("b-0", "b", tflops_capacity=5_000), request(), "free 5 TFLOPS"),
    ("resources", gpu("b-0", "b", vram_capacity=2 * GI), request(), "2Gi VRAM"),
    ("resources", gpu("b-0", "b", tflops_available=1_000), request(), "free 1 TFLOPS"),
    ("model", gpu("b-0", "b", model="H100"), request(gpu_model="A100"), "'H100'"),
    ("vendor", gpu("b-0", "b", vendor="AMD"), request(vendor="NVIDIA"), "'AMD'"),
]


@pytest.mark.parametrize(("stage", "bad", "req", "reason_part"), CASES)
def test_gpu_level_stage_removes_the_bad_gpu_with_a_reason(
    stage: str, bad: GpuInfo, req: GpuRequest, reason_part: str
) -> None:
    good = gpu("a-0", "a", tflops_capacity=100_000)
    if stage == "index":
        good = gpu("a-0", "a")
    allocator = allocator_with(good, bad)
    reasons = removed_by(allocator, req, stage)
    assert set(reasons) == {bad.name}
    assert reason_part in reasons[bad.name]
    simulation = allocator.simulate(req)
    assert simulation.node == "a"
    filtered = allocator.filter(req, ["a", "b"])
    assert filtered.passed == ["a"]
    assert filtered.failed["b"].startswith(stage)


def test_node_affinity_and_node_selector_use_the_gpus_node_labels() -> None:
    allocator = allocator_with(
        gpu("a-0", "a", node_labels=(("zone", "z1"),)), gpu("b-0", "b", node_labels=(("zone", "z2"),))
    )
    by_selector = request(constraints=NodeConstraints(node_selector=(("zone", "z2"),)))
    assert allocator.simulate(by_selector).node == "b"
    assert "nodeSelector zone=z2" in removed_by(allocator, by_selector, "nodeAffinity")["a"]
    term = NodeSelectorTerm(match_expressions=(MatchExpression("zone", "NotIn", ("z2",)),))
    by_affinity = request(constraints=NodeConstraints(required_terms=(term,)))
    assert allocator.simulate(by_affinity).node == "a"
    assert "zone NotIn [z2]" in allocator.filter(by_affinity, ["a", "b"]).failed["b"]


def test_node_labels_from_node_objects_count_too() -> None:
    allocator = allocator_with(gpu("a-0", "a"), gpu("b-0", "b"))
    allocator.state.set_node("b", {"gpu": "fast"})
    req = request(constraints=NodeConstraints(node_selector=(("gpu", "fast"),)))
    assert allocator.simulate(req).node == "b"


def test_same_node_needs_gpu_count_fitting_gpus_on_one_node() -> None:
    allocator = allocator_with(gpu("a-0", "a"), gpu("b-0", "b"), gpu("b-1", "b"))
    simulation = allocator.simulate(request(gpu_count=2))
    assert simulation.node == "b"
    assert sorted(simulation.gpus) == ["b-0", "b-1"]
    assert "2 GPUs are requested on one node" in removed_by(allocator, request(gpu_count=2), "sameNode")["a"]


def test_max_worker_per_node_drops_full_nodes() -> None:
    allocator = allocator_with(
        gpu("a-0", "a"), gpu("b-0", "b"), policy=PlacementPolicy(max_worker_per_node=1)
    )
    first = allocator.reserve(request(name="p1"))
    other = "b" if first.node == "a" else "a"
    reasons = removed_by(allocator, request(name="p2"), "maxWorkerPerNode")
    assert set(reasons) == {first.node}
    assert allocator.reserve(request(name="p2")).node == other


def test_quota_rejects_every_candidate_with_the_quota_message() -> None:
    allocator = allocator_with(gpu("a-0", "a"))
    allocator.set_quota("team", QuotaLimits(tflops_requests=15_000))
    allocator.reserve(request(name="p1"))
    simulation = allocator.simulate(request(name="p2"))
    assert simulation.node is None
    quota_stage = next(s for s in simulation.stages if s.stage == "quota")
    refusal = (
        "this pod's requests.tflops 10 TFLOPS does not fit in what is left of the quota's total 15 TFLOPS"
    )
    assert refusal in quota_stage.reasons["a"]
    allocator.release("team/p1")
    assert allocator.simulate(request(name="p2")).node == "a"


def test_quota_max_workers() -> None:
    allocator = allocator_with(gpu("a-0", "a"))
    allocator.set_quota("team", QuotaLimits(max_workers=1))
    allocator.reserve(request(name="p1"))
    assert "maxWorkers 1 reached" in allocator.filter(request(name="p2"), ["a"]).failed["a"]


def test_oversubscription_bounds_limits_not_requests() -> None:
    allocator = allocator_with(gpu("a-0", "a"))
    allocator.state.set_oversubscription("shared", Oversubscription(tflops_oversell_ratio=300))
    burst = request(name="p1", tflops_request=10_000, tflops_limit=250_000)
    allocator.reserve(burst)
    reasons = removed_by(
        allocator, request(name="p2", tflops_request=10_000, tflops_limit=60_000), "oversubscription"
    )
    assert "300 TFLOPS" in reasons["a-0"]
    assert allocator.simulate(request(name="p3", tflops_request=10_000, tflops_limit=50_000)).node == "a"


def test_no_oversubscription_config_leaves_limits_unbounded() -> None:
    allocator = allocator_with(gpu("a-0", "a"))
    allocator.reserve(request(name="p1", tflops_limit=10_000_000))
    assert allocator.simulate(request(name="p2")).node == "a"


def test_progressive_migration_skips_nodes_with_native_gpu_pods() -> None:
    allocator = allocator_with(gpu("a-0", "a"), gpu("b-0", "b"))
    allocator.state.set_native_gpu_pods("a", 1)
    assert allocator.filter(request(), ["a", "b"]).failed["a"].startswith("nativeGpu")


def test_unknown_nodes_fail_with_a_reason() -> None:
    allocator = allocator_with(gpu("a-0", "a"))
    result = allocator.filter(request(), ["a", "cpu-node"])
    assert result.passed == ["a"]
    assert "no GPU managed by gpupool" in result.failed["cpu-node"]


def test_compute_percent_is_a_share_of_each_gpus_capacity() -> None:
    allocator = allocator_with(gpu("a-0", "a", tflops_capacity=100_000))
    held = allocator.reserve(request(tflops_request=0, tflops_limit=0, compute_percent_request=30.0))
    assert held.tflops_requests == (30_000,)
    assert int(allocator.state.avail_t[allocator.state.slot_of["a-0"]]) == 70_000
    with pytest.raises(Exception, match="no node"):
        allocator.reserve(request(name="big", tflops_request=0, compute_percent_request=80.0))


def test_affinity_masks_are_per_allocator() -> None:
    small = allocator_with(gpu("a-0", "a", node_labels=(("zone", "z1"),)))
    large = allocator_with(*(gpu(f"n{i}-0", f"n{i}", node_labels=(("zone", "z1"),)) for i in range(3)))
    req = request(constraints=NodeConstraints(node_selector=(("zone", "z1"),)))
    assert small.simulate(req).node == "a"
    assert large.filter(req, ["n0", "n1", "n2"]).passed == ["n0", "n1", "n2"]


def test_vram_limits_may_expand_into_host_memory_when_the_pool_says_so() -> None:
    allocator = allocator_with(gpu("a-0", "a", vram_capacity=40 * GI), gpu("a-1", "a", vram_capacity=40 * GI))
    allocator.state.set_oversubscription("shared", Oversubscription(vram_expand_to_host_mem=50))
    allocator.state.set_node("a", {}, host_memory=80 * GI)
    allocator.state.ensure_layout()
    # 40Gi physical + 50 % of 80Gi host memory shared by two GPUs = 60Gi of VRAM limits per GPU.
    assert int(allocator.state.limit_cap_v[allocator.state.slot_of["a-0"]]) == 60 * GI
    ok = request(vram_request=GI, vram_limit=60 * GI)
    assert allocator.simulate(ok).node == "a"
    too_much = request(vram_request=GI, vram_limit=61 * GI)
    assert "oversubscription allows" in removed_by(allocator, too_much, "oversubscription")["a-0"]
    strict = allocator_with(gpu("b-0", "b"))
    strict.state.set_oversubscription("shared", Oversubscription())
    assert strict.simulate(request(vram_request=GI, vram_limit=41 * GI)).node is None


def test_an_empty_cluster_explains_itself() -> None:
    simulation = Allocator().simulate(request())
    assert simulation.node is None and simulation.diagnosis == "no GPU in the cluster"
    assert Allocator().filter(request(), ["a"]).failed == {"a": "no GPU managed by gpupool on this node"}
