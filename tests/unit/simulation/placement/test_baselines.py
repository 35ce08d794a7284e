"""The simulator's baselines follow their definitions (docs/placement.md, `baselines`), on hand-made books.

Each case sets the simulator's books (CPU and memory left per node, milli left per GPU) by hand
and checks the node and GPUs a rule picks against what its definition says: Best-fit (least free
GPU capacity, then least CPU left; tightest GPU), Dot-product (largest alignment of free resources
and demand, with one group per shareable GPU and one of the free GPUs), FGD (the smallest growth
of fragmentation against the trace's typical tasks, computed here by hand), Random-fit (seeded).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from gpupool.simulation.openb import TraceTask, parse_nodes
from gpupool.simulation.placement import replay
from gpupool.simulation.placement.baselines import BestFit, DotProduct, Fgd, RandomFit, make_baseline
from gpupool.simulation.placement.measure import ClusterBooks

NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]


def _nodes(*rows: tuple[object, ...]):  # type: ignore[no-untyped-def]
    return parse_nodes(
        NODE_HEADER, [dict(zip(NODE_HEADER, map(str, r), strict=True)) for r in rows], source="n"
    )


def _task(
    milli: int = 500, num_gpu: int = 1, cpu: int = 1000, memory: int = 1024, spec: tuple[str, ...] = ()
) -> TraceTask:
    return TraceTask("t", cpu, memory, num_gpu, milli if num_gpu == 1 else (1000 if num_gpu else 0), spec, 0)


def _all_rows(books: ClusterBooks) -> np.ndarray:
    return np.arange(len(books.nodes))


def _alive(books: ClusterBooks, task: TraceTask) -> np.ndarray:
    """What the filters would leave: GPUs with the task's share free (whole: entirely free)."""
    return books.gpu_free >= task.share_milli


def test_best_fit_takes_the_tightest_node_then_gpu() -> None:
    books = ClusterBooks.empty(
        _nodes(("a", 8000, 8192, 2, "T4"), ("b", 8000, 8192, 2, "T4"), ("c", 8000, 8192, 2, "T4"))
    )
    books.gpu_free[1] = [400, 1000]  # b: 1.4 GPUs free, the least
    books.gpu_free[2] = [700, 1000]
    task = _task(400)
    row, gpus = BestFit().gpu_choice(books, _all_rows(books), _alive(books, task), task)
    assert (row, gpus) == (1, [0])  # b-0 is the tightest GPU that fits
    whole = _task(1000)
    assert BestFit().gpu_choice(books, _all_rows(books), _alive(books, whole), whole) == (1, [1])


def test_best_fit_places_cpu_only_tasks_by_free_gpus_then_cpu_left() -> None:
    books = ClusterBooks.empty(
        _nodes(("a", 8000, 8192, 2, "T4"), ("b", 8000, 8192, 2, "T4"), ("c", 8000, 8192, 2, "T4"))
    )
    books.gpu_free[:] = [[0, 0], [0, 0], [0, 100]]
    books.cpu_free[:] = [6000, 3000, 8000]
    cpu_only = _task(num_gpu=0)
    assert BestFit().cpu_only_choice(books, _all_rows(books), cpu_only) == 1  # no GPU free, least CPU
    assert BestFit().cpu_only_choice(books, np.array([2, 0]), cpu_only) == 0  # among c and a: a


def test_random_fit_is_seeded_and_stays_feasible() -> None:
    nodes = _nodes(*[(f"n{i}", 16000, 65536, 2, "T4") for i in range(12)])
    tasks = [TraceTask(f"t{i}", 1000, 1024, 1 + i % 2, 500 if i % 2 == 0 else 1000, (), i) for i in range(10)]

    def run(seed: int) -> list[tuple[str, tuple[tuple[int, int], ...]]]:
        result = replay(
            nodes, tasks, "RandomFit", inflation=0.5, seed=seed, specs={}, clock=time.perf_counter
        )
        return [(a.node, a.gpus) for a in result.assignments]

    assert run(3) == run(3)
    assert len({node for node, _ in run(3)}) > 1
    books = ClusterBooks.empty(nodes)
    rng_rule = RandomFit(5)
    task = _task(500)
    row, gpus = rng_rule.gpu_choice(books, _all_rows(books), _alive(books, task), task)
    assert 0 <= row < 12 and len(gpus) == 1


def test_dot_product_takes_the_best_aligned_group() -> None:
    nodes = _nodes(("a", 64000, 65536, 2, "T4"), ("b", 8000, 65536, 2, "T4"))
    books = ClusterBooks.empty(nodes)
    books.gpu_free[0] = [300, 1000]
    books.gpu_free[1] = [1000, 1000]
    rule = DotProduct(nodes)  # scales: 64 CPU, 64 GiB, 2 GPUs
    task = _task(200, cpu=8000, memory=8192)
    host_a = (64 / 64) * (8 / 64) + (64 / 64) * (8 / 64)
    host_b = (8 / 64) * (8 / 64) + (64 / 64) * (8 / 64)
    # a's groups: its shareable GPU (300 free) and its free GPU; b's: its two free GPUs together.
    groups = {("a", 0): host_a + 0.15 * 0.1, ("a", 1): host_a + 0.5 * 0.1, ("b", 0): host_b + 1.0 * 0.1}
    assert max(groups, key=lambda g: groups[g]) == ("a", 1)
    assert rule.gpu_choice(books, _all_rows(books), _alive(books, task), task) == (0, [1])
    assert rule.cpu_only_choice(books, _all_rows(books), _task(num_gpu=0, cpu=8000)) == 0  # the most CPU


def test_fgd_measures_fragmentation_against_the_typical_tasks_and_descends() -> None:
    nodes = _nodes(("a", 16000, 65536, 2, "T4"), ("b", 16000, 65536, 2, "G2"))
    tasks = (
        [_task(500, cpu=4000)] * 3 + [_task(1000, cpu=8000, spec=("G2",))] + [_task(num_gpu=0, cpu=2000)] * 6
    )
    rule = Fgd(nodes, tasks)
    assert sorted(rule.typical, key=lambda t: -t[1]) == [
        ((2000, 0, 0, ()), pytest.approx(0.6)),
        ((4000, 500, 1, ()), pytest.approx(0.3)),
        ((8000, 1000, 1, ("G2",)), pytest.approx(0.1)),
    ]
    books = ClusterBooks.empty(nodes)
    books.gpu_free[:] = [[300, 1000], [600, 1000]]
    books.cpu_free[:] = [16000, 6000]
    # a (T4): CPU-only → all 1300 free; 500-task runs: the 300 GPU is short; G2-task: no access.
    # b (G2): CPU-only → 1600; 500-task runs (6 CPU ≥ 4): the 600 GPU fits, nothing short;
    # G2 whole task: 6 CPU < 8 → all 1600.
    expected = [0.6 * 1300 + 0.3 * 300 + 0.1 * 1300, 0.6 * 1600 + 0.3 * 0 + 0.1 * 1600]
    got = rule.fragmentation(books.cpu_free, books.gpu_free, rule.models)
    assert got == pytest.approx(expected)
    task = _task(500, cpu=4000)
    row, gpus = rule.gpu_choice(books, _all_rows(books), _alive(books, task), task)
    after = {}
    for r, g in ((0, 1), (1, 0), (1, 1)):
        trial = books.gpu_free.copy()
        trial[r, g] -= 500
        cpu = books.cpu_free.copy()
        cpu[r] -= 4000
        after[(r, g)] = rule.fragmentation(cpu, trial, rule.models)[r] - got[r]
    assert (row, gpus[0]) == min(after, key=lambda k: (round(after[k], 6), k))


def test_every_baseline_is_made_by_name_and_unknown_names_are_refused() -> None:
    nodes = _nodes(("a", 16000, 65536, 2, "T4"))
    for name, kind in (
        ("RandomFit", RandomFit),
        ("BestFit", BestFit),
        ("DotProduct", DotProduct),
        ("FGD", Fgd),
    ):
        assert isinstance(make_baseline(name, nodes, [_task()], 0), kind)
    with pytest.raises(ValueError, match="unknown baseline"):
        make_baseline("WorstFit", nodes, [_task()], 0)
