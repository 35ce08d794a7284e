"""The usable-GPUs Node label: which GPUs count, and which nodes must gain, change or lose it."""

from __future__ import annotations

import pytest

from gpupool.core.allocator.records import GpuInfo
from gpupool.core.allocator.usable_gpus import plan_usable_gpu_labels, usable_gpus_per_node


def _gpu(name: str, node: str, phase: str = "Running") -> GpuInfo:
    return GpuInfo(name=name, node=node, pool="p", tflops_capacity=1, vram_capacity=1, phase=phase)


def test_only_running_gpus_count_per_node() -> None:
    gpus = [
        _gpu("a0", "a"),
        _gpu("a1", "a"),
        _gpu("a2", "a", phase="Unusable (missing since 2026-12-07T20:00:00Z)"),
        _gpu("b0", "b", phase="Pending"),
        _gpu("c0", "c"),
    ]
    assert usable_gpus_per_node(gpus) == {"a": 2, "c": 1}


PLANS = [
    # counts, labelled, known -> changes
    ({"a": 2}, {}, {"a"}, {"a": "2"}),  # GPUs came: label it
    ({"a": 2}, {"a": "2"}, {"a"}, {}),  # already right: nothing
    ({"a": 3}, {"a": "2"}, {"a"}, {"a": "3"}),  # one more (or one back): a change again
    ({}, {"a": "2"}, {"a"}, {"a": None}),  # none usable: the label goes, so the next GPU is a change
    ({"a": 1, "b": 1}, {}, {"a"}, {"a": "1"}),  # b has no Node object yet: left alone
    ({}, {"x": "junk"}, {"x"}, {"x": None}),  # a value someone wrote on a node without GPUs: removed
    ({}, {}, set(), {}),
]


@pytest.mark.parametrize(("counts", "labelled", "known", "changes"), PLANS)
def test_plan_labels_each_known_node_with_its_usable_gpus(
    counts: dict[str, int], labelled: dict[str, str], known: set[str], changes: dict[str, str | None]
) -> None:
    assert plan_usable_gpu_labels(counts, labelled, known) == changes
