"""The bounded reason a filter that placed nothing is counted under (the relay's metric label)."""

from __future__ import annotations

from typing import Any

import pytest

from gpupool.scheduler.extender import FAILURE_REASONS, failure_reason


def _result(failed: dict[str, str], unresolvable: dict[str, str] | None = None) -> dict[str, Any]:
    return {"NodeNames": [], "FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable or {}}


@pytest.mark.parametrize(
    ("failed", "unresolvable", "expected"),
    [
        ({"a": "resources: gpu-a-0: free 1 TFLOPS < requested 5", "b": "model: wrong"}, None, "resources"),
        ({"a": "model: x", "b": "model: y", "c": "quota: over"}, None, "model"),
        ({"a": "quota: over", "b": "model: y"}, None, "model"),  # a tie: the earlier stage
        ({"a": "pod holds GPUs g0 on b (waiting for its gang)"}, None, "gang"),
        ({}, {"a": "pod's GPU annotations are invalid: bad"}, "invalidRequest"),
        ({"a": "something new: the allocator said"}, None, "other"),
        ({}, None, "other"),
    ],
)
def test_the_reason_is_the_stage_most_nodes_were_lost_at(
    failed: dict[str, str], unresolvable: dict[str, str] | None, expected: str
) -> None:
    assert failure_reason(_result(failed, unresolvable)) == expected


def test_every_reason_is_one_of_a_bounded_set() -> None:
    """A label's values must not grow with the cluster: node names and numbers never reach it."""
    words = {failure_reason(_result({f"n{i}": f"weird {i}: text"})) for i in range(50)}
    assert words <= set(FAILURE_REASONS) and words == {"other"}
