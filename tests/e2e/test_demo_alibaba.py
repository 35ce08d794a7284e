"""`gpupool demo --cloud alibaba`: the same story on Alibaba Cloud, through the real FC handlers,
services and adapters (ECS through the SDK on the sandbox endpoint, Kubernetes on the embedded
API server), on a simulated clock.

Checks the end state the demo read back from Kubernetes and the sandbox ECS: every claim reached
Bound on gn instances in cn-hangzhou; the spike raised capacity above the minimum (a third
claim); compaction removed exactly the surplus after the 5-minute protection and bind deleted
its instance (no orphan: every live instance belongs to a live claim, and nodes match claims);
state changes reached bind as ECS CloudEvents; the run is repeatable; and with the never-join
story the claim fails at the registration timeout, its instance is deleted and the gap refilled.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from gpupool.cli.main import main


def _run(*extra: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["demo", "--cloud", "alibaba", "--json", *extra])
    assert code == 0, out.getvalue()[-3000:]
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


@pytest.fixture(scope="module")
def demo() -> dict[str, Any]:
    return _run()


def test_the_story_ends_at_the_minimum_with_no_orphan(demo: dict[str, Any]) -> None:
    final, phases = demo["final"], demo["claim_phases"]
    assert len(phases) == 3, "two for the minimum, one for the spike"
    assert all("Bound" in history for history in phases.values())
    gone = [name for name, history in phases.items() if history[-1] == "Gone"]
    assert len(gone) == 1, "compaction removed exactly the surplus"
    live_claims = set(final["claims"])
    live_instances = {i: info for i, info in final["instances"].items() if info["state"] != "terminated"}
    assert {info["claim"] for info in live_instances.values()} == live_claims
    assert all(info["type"].startswith("ecs.gn") for info in final["instances"].values())
    assert set(final["nodes"].values()) == live_claims
    assert all(info["state"] == "terminated" for info in final["instances"].values() if info["claim"] in gone)
    assert final["pool_phase"] == "Running"


def test_ecs_state_changes_reach_bind_as_cloudevents(demo: dict[str, Any]) -> None:
    summaries = [entry["summary"] for entry in demo["timeline"]]
    assert any(s.startswith("bind ← ECS ") and s.split()[-1] != "ignored" for s in summaries)
    assert not any(
        entry.get("outcome", {}).get("errors") for entry in demo["timeline"] if entry.get("outcome")
    )


def test_the_run_is_repeatable(demo: dict[str, Any]) -> None:
    again = _run()
    assert [e["summary"] for e in again["timeline"]] == [e["summary"] for e in demo["timeline"]]


def test_a_node_that_never_joins_is_failed_deleted_and_refilled() -> None:
    result = _run("--story", "never-join")
    histories = list(result["claim_phases"].values())
    assert any("Failed" in history for history in histories)
    failed = next(name for name, history in result["claim_phases"].items() if "Failed" in history)
    instances = result["final"]["instances"]
    assert all(info["state"] == "terminated" for info in instances.values() if info["claim"] == failed)
    assert sum(1 for history in histories if "Bound" in history) >= 2, "the gap was refilled"
