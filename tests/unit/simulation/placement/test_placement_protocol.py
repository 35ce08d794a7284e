"""The replay protocol: passes, inflation, errors, who places CPU-only tasks, the measure and its
causes (the trace reader's own tests are in tests/unit/simulation/test_openb_trace.py; the
baselines' rules in test_baselines.py).

Table tests on tiny hand-made traces, whose expected outcomes follow from docs/placement.md.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from gpupool.simulation.openb import TraceError, TraceTask, parse_nodes
from gpupool.simulation.placement import DEFAULT_SPEC, PLACEMENTS, arrivals, catalog_specs, replay, spec_for
from gpupool.simulation.placement.measure import (
    CAUSES,
    ClusterBooks,
    TaskType,
    fragmented_gpus,
    unallocated_by_cause,
)

NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
TASK_HEADER = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "creation_time"]


def _task(
    name: str, num_gpu: int = 1, milli: int = 500, created: int | None = 0, cpu: int = 1000
) -> TraceTask:
    return TraceTask(
        name, cpu, 1024, num_gpu, milli if num_gpu == 1 else (1000 if num_gpu else 0), (), created
    )


def _rows(header: list[str], *rows: tuple[object, ...]) -> list[dict[str, str]]:
    return [dict(zip(header, map(str, row), strict=True)) for row in rows]


def test_passes_repeat_the_list_and_stop_at_the_first_task_reaching_the_target() -> None:
    tasks = [
        _task("x", milli=600, created=0),
        _task("cpu", num_gpu=0, created=1),
        _task("y", milli=400, created=2),
    ]
    # 2 GPUs × 1.3 = 2.6 GPUs: x .6, cpu, y 1.0, x-2 1.6, cpu-2, y-2 2.0, x-3 2.6 (reaches it)
    sequence = arrivals(tasks, gpus_total=2, inflation=1.3)
    assert [a.name for a in sequence] == ["x", "cpu", "y", "x-2", "cpu-2", "y-2", "x-3"]
    assert sequence[-1].requested_milli == 2600
    with pytest.raises(TraceError, match="no GPU task"):
        arrivals([_task("cpu", num_gpu=0)], gpus_total=2, inflation=1.3)
    with pytest.raises(TraceError, match="positive"):
        arrivals(tasks, gpus_total=2, inflation=0)


def test_gpu_models_map_to_the_catalog_or_the_documented_default() -> None:
    specs = catalog_specs()
    assert spec_for("T4", specs) == specs["T4"]
    assert spec_for("V100M32", specs).vram_bytes == 32 << 30
    assert spec_for("V100M32", specs).tflops_milli == specs["V100"].tflops_milli
    assert spec_for("G2", specs) == DEFAULT_SPEC and not DEFAULT_SPEC.known


def test_fragmented_gpus_follow_the_definition_on_a_hand_made_cluster() -> None:
    nodes = parse_nodes(
        NODE_HEADER,
        _rows(NODE_HEADER, ("a", 8000, 8192, 2, "T4"), ("b", 8000, 8192, 2, "V100M16")),
        source="n",
    )
    books = ClusterBooks.empty(nodes)
    books.gpu_free[0] = [300, 1000]  # a: 0.3 + 1.0 free
    books.gpu_free[1] = [600, 0]  # b: 0.6 free
    books.cpu_free[1] = 500  # b cannot host a 1000-milli-CPU task at all
    half = TaskType(1, 500, 1000, 1024, ())
    whole_t4 = TaskType(1, 1000, 0, 0, ("T4",))
    assert fragmented_gpus(books, [(half, 1.0)]) == pytest.approx(0.3 + 0.6)
    assert fragmented_gpus(books, [(whole_t4, 1.0)]) == pytest.approx(0.3 + 0.6)
    assert fragmented_gpus(books, [(TaskType(2, 1000, 0, 0, ()), 1.0)]) == pytest.approx(1.3 + 0.6)
    assert fragmented_gpus(books, [(half, 0.5), (whole_t4, 0.5)]) == pytest.approx(0.9)
    assert books.free_gpus == pytest.approx(1.9)


def test_replay_is_deterministic_per_seed_and_counts_every_task() -> None:
    header = NODE_HEADER
    nodes = parse_nodes(
        header, _rows(header, *[(f"n{i}", 16000, 65536, 2, "T4") for i in range(4)]), source="n"
    )
    tasks = [
        _task(f"t{i}", milli=(300, 700, 1000, 0)[i % 4], num_gpu=0 if i % 4 == 3 else 1) for i in range(20)
    ]
    runs = {
        mode: [
            replay(nodes, tasks, mode, inflation=1.3, seed=s, specs={}, clock=time.perf_counter)
            for s in (1, 1)
        ]
        for mode in ("RandomFit", "BestFit", "FragmentationAware")
    }
    for first, again in runs.values():
        assert first.assignments == again.assignments
        assert first.tasks_placed + first.tasks_failed == len(arrivals(tasks, 8, 1.3))
        assert first.gpu_allocated == pytest.approx(
            sum(m for a in first.assignments for _, m in a.gpus) / 1000
        )
        assert first.curve[-1] == (first.gpu_requested, first.gpu_allocated)
        assert np.isclose(first.free_gpus, first.gpus_total - first.gpu_allocated)
    with pytest.raises(TraceError, match="unknown placement"):
        replay(nodes, tasks, "Nope", inflation=1.3, seed=0, specs={}, clock=time.perf_counter)


def test_unallocated_gpus_split_by_cause_add_up_to_the_measure() -> None:
    nodes = parse_nodes(
        NODE_HEADER,
        _rows(
            NODE_HEADER,
            ("a", 8000, 8192, 2, "T4"),
            ("b", 8000, 8192, 2, "G2"),
            ("c", 8000, 8192, 4, "G2"),
            ("d", 8000, 8192, 2, "G2"),
        ),
        source="n",
    )
    books = ClusterBooks.empty(nodes)
    books.gpu_free[0, :2] = [1000, 1000]  # a: a T4, which the G2-only type cannot use
    books.gpu_free[1, :2] = [1000, 0]  # b: no CPU left
    books.cpu_free[1] = 0
    books.gpu_free[2, :4] = [1000, 0, 0, 0]  # c: one whole GPU where the type needs two
    books.gpu_free[3, :2] = [200, 0]  # d: a leftover too small for its share
    kind = TaskType(2, 1000, 1000, 1024, ("G2",))
    share = TaskType(1, 500, 1000, 1024, ())
    mix = [(kind, 0.5), (share, 0.5)]
    parts = unallocated_by_cause(books, mix)
    assert tuple(parts) == CAUSES
    assert sum(parts.values()) == pytest.approx(fragmented_gpus(books, mix))
    assert parts["model constraints"] == pytest.approx(0.5 * 2.0)  # a, for the G2-only type
    assert parts["CPU or memory"] == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)  # b, for both types
    assert parts["multi-GPU"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.2)  # c and d lack two whole GPUs
    assert parts["fractional leftovers"] == pytest.approx(0.5 * 0.2)  # d's 200 milli, for the 500 type


def test_under_least_allocated_every_rule_leaves_cpu_only_tasks_to_kube_scheduler() -> None:
    nodes = parse_nodes(
        NODE_HEADER,
        _rows(NODE_HEADER, ("small", 8000, 65536, 2, "T4"), ("big", 64000, 65536, 2, "T4")),
        source="n",
    )
    tasks = [_task("cpu", num_gpu=0, created=0, cpu=4000), _task("gpu", milli=500, created=1)]
    for placement in PLACEMENTS:
        result = replay(
            nodes, tasks, placement, inflation=0.2, seed=0, specs={}, clock=time.perf_counter,
            protocol="least-allocated",
        )  # fmt: skip
        first = result.assignments[0]
        assert (first.pod, first.node) == ("cpu", "big"), placement  # the most CPU left, as a fraction
        assert result.protocol == "least-allocated"
    best_fit = replay(nodes, tasks, "BestFit", inflation=0.2, seed=0, specs={}, clock=time.perf_counter)
    assert best_fit.assignments[0].node == "small"  # by its own rule: ties on free GPUs, least CPU left
    with pytest.raises(TraceError, match="unknown protocol"):
        replay(
            nodes, tasks, "BestFit", inflation=0.2, seed=0, specs={}, clock=time.perf_counter, protocol="x"
        )
