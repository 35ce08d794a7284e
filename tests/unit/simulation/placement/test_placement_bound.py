"""The limit `benchmarks/placement.py` prints: a valid upper bound, tight where it can be checked.

On a one-GPU cluster the bound is worked out by hand (a 600-milli task arrives first, so no rule
can refuse it, and then neither 500 fits: 0.6 GPU, not the 1.0 of a packing that could skip the
first). On the slice of openb in `data/`, every rule the simulator runs must place
every arrival the LP says it must, and allocate no more than the bound.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.reference.placement_bound import forced_counts, kind_of, packing_bound, placement_bound
from gpupool.cli.simulate_placement import read_trace
from gpupool.simulation.openb import TraceTask, parse_nodes
from gpupool.simulation.placement import arrivals, replay

DATA = Path(__file__).parent / "data"
NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]


def test_on_one_gpu_the_first_task_is_forced_and_bounds_the_rest() -> None:
    nodes = parse_nodes(
        NODE_HEADER, [dict(zip(NODE_HEADER, ["a", "8000", "8192", "1", "T4"], strict=True))], source="n"
    )
    tasks = [
        TraceTask(name, 1000, 1024, 1, milli, (), t)
        for t, (name, milli) in enumerate((("x", 600), ("y", 500), ("z", 500)))
    ]
    sequence = arrivals(tasks, gpus_total=1, inflation=1.6)
    assert [a.name for a in sequence] == ["x", "y", "z"]
    forced = forced_counts(nodes, sequence)
    assert forced == {kind_of(tasks[0]): 1, kind_of(tasks[1]): 0}
    assert packing_bound(nodes, sequence, {}) == pytest.approx(1.0)
    bound = placement_bound(nodes, sequence)
    assert (bound.gpus, bound.forced_tasks, bound.forced_gpus) == (pytest.approx(0.6), 1, pytest.approx(0.6))


@pytest.mark.slow
def test_on_the_slice_every_rule_places_what_the_lp_forces_and_stays_under_the_bound() -> None:
    nodes, tasks = read_trace(DATA / "openb_nodes_slice.csv", DATA / "openb_pods_slice.csv")
    sequence = arrivals(tasks, sum(n.gpus for n in nodes), 1.3)
    bound = placement_bound(nodes, sequence, checked=12)
    forced = forced_counts(nodes, sequence, checked=12)
    assert 0 < bound.forced_tasks < len(sequence) and bound.gpus <= sum(n.gpus for n in nodes)
    must: set[str] = set()
    seen: Counter[object] = Counter()
    for arrival in sequence:
        kind = kind_of(arrival.task)
        if seen[kind] < forced.get(kind, 0):
            must.add(arrival.name)
        seen[kind] += 1
    for placement in (
        "RandomFit",
        "BestFit",
        "FGD",
        "NodeCompactGPULowLoad",
        "FragmentationAware",
        "BalancedFit",
    ):
        for protocol in ("rule", "least-allocated"):
            result = replay(
                nodes,
                tasks,
                placement,
                inflation=1.3,
                seed=0,
                specs={},
                clock=time.perf_counter,
                protocol=protocol,
            )
            assert result.gpu_allocated <= bound.gpus + 1e-6, (placement, protocol)
            assert must <= {a.pod for a in result.assignments}, (placement, protocol)
