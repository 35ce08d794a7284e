"""The benchmark's own trace variants: more `gpu_spec` constraints, more multi-GPU tasks (seeded).

On the slice of openb in `data/`: the same seed gives the same variant; the share asked for is
met (constraints: within a few points, as drawn; multi-GPU: at least the share, stopping at the
first copy that reaches it); every constraint names models some node can hold the task on; copies
are named `NAME-xI` and spread over the trace's creation times; a variant written as a pod list
reads back as the same tasks; bad shares are refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupool.cli.simulate_placement import read_trace
from gpupool.simulation.openb import TraceError, parse_tasks, split_csv
from gpupool.simulation.placement.variants import pod_list_csv, with_gpu_specs, with_multi_gpu

DATA = Path(__file__).parent / "data"
NODES, TASKS = read_trace(DATA / "openb_nodes_slice.csv", DATA / "openb_pods_slice.csv")


def test_gpu_spec_variant_constrains_the_share_asked_with_satisfiable_models() -> None:
    variant = with_gpu_specs(NODES, TASKS, share=0.33, seed=1)
    assert variant == with_gpu_specs(NODES, TASKS, share=0.33, seed=1)
    assert variant != with_gpu_specs(NODES, TASKS, share=0.33, seed=2)
    gpu = [t for t in variant if t.num_gpu]
    constrained = [t for t in gpu if t.gpu_spec]
    assert 0.25 < len(constrained) / len(gpu) < 0.41
    assert any(len(t.gpu_spec) == 2 for t in constrained)
    for task in constrained:
        assert any(
            n.model in task.gpu_spec and n.gpus >= task.num_gpu and n.cpu_milli >= task.cpu_milli
            for n in NODES
        ), task
    assert [t.name for t in variant] == [t.name for t in TASKS]
    assert all(not t.gpu_spec for t in variant if not t.num_gpu)


def test_multi_gpu_variant_reaches_the_share_with_named_copies() -> None:
    variant = with_multi_gpu(TASKS, share=0.5, seed=1)
    assert variant == with_multi_gpu(TASKS, share=0.5, seed=1)
    demand = sum(t.gpu_demand_milli for t in variant)
    multi = sum(t.gpu_demand_milli for t in variant if t.num_gpu > 1)
    assert 0.5 <= multi / demand < 0.6
    copies = variant[len(TASKS) :]
    assert variant[: len(TASKS)] == TASKS and copies
    originals = {t.name: t for t in TASKS}
    for i, copy in enumerate(copies):
        base, _, suffix = copy.name.rpartition("-")
        assert suffix == f"x{i}" and originals[base].num_gpu == copy.num_gpu > 1
    assert len({c.creation_time for c in copies}) > 1


def test_a_variant_reads_back_as_a_pod_list() -> None:
    variant = with_gpu_specs(NODES, with_multi_gpu(TASKS, share=0.3), share=0.5)
    header, rows = split_csv(pod_list_csv(variant), source="variant")
    assert parse_tasks(header, rows, source="variant") == variant


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: with_gpu_specs(NODES, TASKS, share=1.5), "must lie in 0..1"),
        (lambda: with_multi_gpu(TASKS, share=1.0), "below 1"),
        (lambda: with_multi_gpu([t for t in TASKS if t.num_gpu <= 1], share=0.5), "no multi-GPU task"),
    ],
)
def test_bad_shares_are_refused(make: object, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        make()  # type: ignore[operator]
