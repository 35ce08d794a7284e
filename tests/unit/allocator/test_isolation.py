"""Isolation, partition and dedicated-GPU stages: which workers may share a GPU, each with its reason."""

from __future__ import annotations

import pytest

from gpupool.core.allocator import Allocation, Allocator, GpuInfo, GpuRequest, QuotaLimits
from gpupool.core.allocator.filters import STAGES
from gpupool.core.allocator.pod_request import RequestError, allocation_from_pod, request_from_pod
from gpupool.core.model.foreign import Pod

GI = 1 << 30
T = "tensor-fusion.ai/"


def gpu(name: str, node: str, **overrides: object) -> GpuInfo:
    fields: dict[str, object] = {
        "name": name,
        "node": node,
        "pool": "shared",
        "tflops_capacity": 100_000,
        "vram_capacity": 40 * GI,
    }
    fields.update(overrides)
    return GpuInfo(**fields)  # type: ignore[arg-type]


def request(name: str = "pod", **overrides: object) -> GpuRequest:
    fields: dict[str, object] = {
        "namespace": "team",
        "name": name,
        "pool": "shared",
        "tflops_request": 10_000,
        "tflops_limit": 10_000,
        "vram_request": 4 * GI,
        "vram_limit": 4 * GI,
    }
    fields.update(overrides)
    return GpuRequest(**fields)  # type: ignore[arg-type]


def holding(
    gpu_name: str, node: str, isolation: str, *, dedicated: bool = False, name: str = "old"
) -> Allocation:
    return Allocation(
        namespace="team",
        name=name,
        node=node,
        gpus=(gpu_name,),
        tflops_requests=(1_000,),
        tflops_limits=(1_000,),
        vram_request=GI,
        vram_limit=GI,
        isolation=isolation,
        dedicated=dedicated,
    )


def allocator_with(*gpus: GpuInfo) -> Allocator:
    allocator = Allocator()
    for info in gpus:
        allocator.state.upsert_gpu(info)
    return allocator


def stage_reasons(allocator: Allocator, req: GpuRequest, stage: str) -> dict[str, str]:
    return next((s.reasons for s in allocator.simulate(req).stages if s.stage == stage), {})


# (worker already on b-0, its dedicated flag, b-0's own settings, the new pod, reason or None = kept)
ISOLATION_CASES = [
    (
        "hard",
        False,
        {},
        request(isolation="soft"),
        "GPU runs 1 hard worker(s); shared and soft workers share",
    ),
    ("hard", False, {}, request(isolation="shared"), "GPU runs 1 hard worker(s)"),
    (
        "soft",
        False,
        {},
        request(isolation="hard"),
        "GPU runs 1 soft worker(s); hard workers share a GPU only",
    ),
    ("shared", False, {}, request(isolation="hard"), "GPU runs 1 shared worker(s); hard workers"),
    ("partitioned", False, {"partitions": True}, request(isolation="soft"), "1 partitioned worker(s)"),
    (
        "soft",
        False,
        {"partitions": True},
        request(isolation="partitioned"),
        "partitioned workers share a GPU only",
    ),
    ("soft", True, {}, request(isolation="soft"), "held whole by a dedicated worker"),
    (
        "soft",
        False,
        {},
        request(dedicated=True),
        "asks for a dedicated GPU and this one already runs workers (1 soft)",
    ),
    (None, False, {"isolation_mode": "hard"}, request(isolation="soft"), "set up for 'hard' isolation"),
    ("soft", False, {}, request(isolation="shared"), None),
    ("shared", False, {}, request(isolation="soft"), None),
    ("hard", False, {}, request(isolation="hard"), None),
    ("partitioned", False, {"partitions": True}, request(isolation="partitioned"), None),
    (None, False, {"isolation_mode": "hard"}, request(isolation="hard"), None),
    (None, False, {}, request(dedicated=True), None),
]


@pytest.mark.parametrize(("held", "dedicated", "settings", "req", "reason"), ISOLATION_CASES)
def test_isolation_stage_keeps_or_removes_with_a_reason(
    held: str | None, dedicated: bool, settings: dict[str, object], req: GpuRequest, reason: str | None
) -> None:
    partitions = req.isolation == "partitioned"
    allocator = allocator_with(gpu("a-0", "a", partitions=partitions), gpu("b-0", "b", **settings))
    if held is not None:
        allocator.add_allocation(holding("b-0", "b", held, dedicated=dedicated))
    reasons = stage_reasons(allocator, req, "isolation")
    filtered = allocator.filter(req, ["a", "b"])
    if reason is None:
        assert reasons == {}
        assert sorted(filtered.passed) == ["a", "b"]
        return
    assert set(reasons) == {"b-0"}
    assert reason in reasons["b-0"]
    assert filtered.passed == ["a"]
    assert filtered.failed["b"].startswith("isolation: b-0: ")
    assert allocator.reserve(req).node == "a"


def test_released_workers_stop_constraining_the_gpu() -> None:
    allocator = allocator_with(gpu("b-0", "b"))
    allocator.add_allocation(holding("b-0", "b", "hard"))
    assert allocator.simulate(request(isolation="soft")).node is None
    allocator.release("team/old")
    assert allocator.simulate(request(isolation="soft")).node == "b"


PARTITION_CASES = [
    ({}, "no partition support (status.isolationMode is 'unset', no status.allocatedPartitions)"),
    ({"isolation_mode": "soft"}, None),  # removed earlier, by the isolation stage
    ({"partitions": True}, ""),
    ({"isolation_mode": "partitioned"}, ""),
]


@pytest.mark.parametrize(("settings", "reason"), PARTITION_CASES)
def test_partition_stage_needs_a_gpu_that_reports_partitions(
    settings: dict[str, object], reason: str | None
) -> None:
    allocator = allocator_with(gpu("b-0", "b", **settings))
    req = request(isolation="partitioned")
    simulation = allocator.simulate(req)
    if reason is None:
        assert "set up for 'soft' isolation" in stage_reasons(allocator, req, "isolation")["b-0"]
        assert simulation.node is None
    elif reason:
        assert reason in stage_reasons(allocator, req, "partition")["b-0"]
        assert simulation.node is None
        assert simulation.diagnosis == "no candidate left after stage 'partition'"
    else:
        assert simulation.node == "b"


def test_stages_run_in_tensorfusion_order() -> None:
    allocator = allocator_with(gpu("b-0", "b", partitions=True))
    names = [s.stage for s in allocator.simulate(request(isolation="partitioned")).stages]
    assert (
        names.index("phase") < names.index("isolation") < names.index("partition") < names.index("resources")
    )
    assert [s for s in STAGES if s in names] == names
    assert "partition" not in [s.stage for s in allocator.simulate(request()).stages]
    # A GPU both held by a hard worker and too small is reported by the earlier stage.
    allocator.add_allocation(holding("b-0", "b", "hard"))
    assert "b-0" in stage_reasons(allocator, request(tflops_request=500_000), "isolation")


def test_dedicated_worker_reserves_the_whole_gpu_and_gives_it_back() -> None:
    allocator = allocator_with(
        gpu("a-0", "a", tflops_capacity=50_000, vram_capacity=24 * GI), gpu("b-0", "b")
    )
    allocator.add_allocation(holding("b-0", "b", "soft"))
    held = allocator.reserve(request("whole", dedicated=True))
    assert (held.node, held.gpus, held.dedicated) == ("a", ("a-0",), True)
    assert (held.tflops_requests, held.tflops_limits, held.vram_requests) == (
        (50_000,),
        (50_000,),
        (24 * GI,),
    )
    state = allocator.state
    slot = state.slot_of["a-0"]
    assert (int(state.avail_t[slot]), int(state.avail_v[slot])) == (0, 0)
    assert allocator.usage["team"].vram_requests == 24 * GI + GI
    tiny = request("tiny", tflops_request=0, vram_request=0, tflops_limit=0, vram_limit=0)
    assert "held whole by a dedicated worker" in stage_reasons(allocator, tiny, "isolation")["a-0"]
    allocator.release("team/whole")
    assert (int(state.avail_t[slot]), int(state.avail_v[slot])) == (50_000, 24 * GI)
    assert allocator.simulate(tiny).node is not None


def test_dedicated_request_is_refused_by_a_gpu_with_unexplained_use() -> None:
    allocator = allocator_with(gpu("b-0", "b", tflops_available=90_000))
    reasons = stage_reasons(allocator, request(dedicated=True), "resources")
    assert "free 90 TFLOPS / 40Gi VRAM < requested 100 TFLOPS / 40Gi VRAM" in reasons["b-0"]


def test_dedicated_quota_counts_a_whole_gpu() -> None:
    allocator = allocator_with(gpu("b-0", "b"))
    allocator.set_quota("team", QuotaLimits(vram_requests=8 * GI))
    simulation = allocator.simulate(request(dedicated=True))
    assert simulation.node is None
    assert "this pod's requests.vram 40Gi does not fit" in simulation.node_reasons["b"]


def _pod(annotations: dict[str, str]) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {
                "name": "w",
                "namespace": "team",
                "annotations": {T + "gpupool": "shared", **annotations},
            },
            "spec": {"nodeName": "b", "containers": [{"name": "c"}]},
        }
    )


def test_annotations_carry_isolation_and_dedicated_into_requests_and_rebuilt_allocations() -> None:
    assert request_from_pod(_pod({T + "dedicated-gpu": "true"})).dedicated is True
    assert request_from_pod(_pod({})).dedicated is False
    with pytest.raises(RequestError, match="dedicated-gpu='yes' must be true or false"):
        request_from_pod(_pod({T + "dedicated-gpu": "yes"}))
    gpus = {"b-0": gpu("b-0", "b", vram_capacity=80 * GI)}
    whole = allocation_from_pod(_pod({T + "dedicated-gpu": "true", T + "gpu-ids": "b-0"}), gpus)
    assert whole is not None
    assert (whole.dedicated, whole.tflops_requests, whole.vram_requests) == (True, (100_000,), (80 * GI,))
    hard = allocation_from_pod(
        _pod({T + "isolation": "hard", T + "tflops-request": "5", T + "gpu-ids": "b-0"}), gpus
    )
    assert hard is not None and (hard.isolation, hard.dedicated) == ("hard", False)
    allocator = allocator_with(gpus["b-0"])
    allocator.add_allocation(hard)
    assert "1 hard worker(s)" in stage_reasons(allocator, request(), "isolation")["b-0"]
