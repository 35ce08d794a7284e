"""The replay protocol: passes, inflation, errors, baselines, measure (the trace reader's own
tests are in tests/unit/simulation/test_openb_trace.py).

Table tests on tiny hand-made traces, whose expected outcomes follow from docs/placement.md.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from gpupool.simulation.openb import TraceError, TraceTask, parse_nodes
from gpupool.simulation.placement import DEFAULT_SPEC, arrivals, catalog_specs, replay, spec_for
from gpupool.simulation.placement.measure import ClusterBooks, TaskType, fragmented_gpus

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
