"""Every function decides the same actions on the scale benchmark's world as before issue 23.

The fixture `tests/fixtures/scale/decided-actions.json` holds, per world (6 nodes in 2 pools, 24
in 3), per function (launch, bind, compact — in that order, each with its own deps as its own
Lambda has, the event given twice), the actions each invocation's plan held, as the handler
returns them (uids, which the server makes at random, read as `<uid>`). It was recorded on the
code before issue 23 changed what the functions read (`python -m
tests.contract.kube.test_scale_decisions` writes it; never re-record it to make this test pass —
a different action is a changed decision). This test runs the same invocations through the real
handlers, service and Kubernetes adapter on the embedded API server and compares.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks.scale import FUNCTIONS, function_deps, scheduled_event
from benchmarks.scale_compute import ScaleCompute
from benchmarks.scale_server import load
from benchmarks.scale_world import NOW, ScaleWorld
from gpupool.handlers.aws_lambda import make_handler
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "scale" / "decided-actions.json"
WORLDS = {
    "6 nodes, 2 pools": ScaleWorld(nodes=6, pools=2),
    "24 nodes, 3 pools": ScaleWorld(nodes=24, pools=3),
}


def _without_uids(value: Any) -> Any:
    """`value` with every `uid` (the server makes them at random) read as `<uid>`."""
    if isinstance(value, dict):
        return {k: "<uid>" if k == "uid" else _without_uids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_uids(v) for v in value]
    return value


def decided(world: ScaleWorld) -> dict[str, list[dict[str, Any]]]:
    """Per function, its two invocations' status and plan actions, on a fresh server holding `world`."""
    clock = ManualClock(NOW - timedelta(days=1))
    found: dict[str, list[dict[str, Any]]] = {}
    with EmbeddedKubeAPI(clock=clock) as api:
        load(api, world)
        clock.set(NOW)
        cloud = ScaleCompute(world.instances(), cluster="scale", launch_time=NOW)
        for function in FUNCTIONS:
            deps = function_deps(cloud, str(api.kubeconfig_path))
            handler = make_handler(function, lambda deps=deps: deps)  # type: ignore[misc]
            runs = []
            for _ in range(2):
                with redirect_stdout(io.StringIO()):
                    result = handler(scheduled_event(function), None)
                runs.append({"status": result["status"], "actions": _without_uids(result["plan"]["actions"])})
            found[function] = runs
    return found


@pytest.mark.parametrize("label", sorted(WORLDS))
def test_each_function_decides_what_it_decided_before(label: str) -> None:
    recorded = json.loads(FIXTURE.read_text())[label]
    now = decided(WORLDS[label])
    for function in FUNCTIONS:
        for run, (before, after) in enumerate(zip(recorded[function], now[function], strict=True)):
            assert after == before, f"{function} invocation {run + 1} decides differently on {label}"


def test_the_fixture_records_real_work() -> None:
    """The recorded invocations did something (a fixture of empty plans would prove nothing)."""
    recorded = json.loads(FIXTURE.read_text())
    for label in WORLDS:
        for function in FUNCTIONS:
            first = recorded[label][function][0]
            assert first["status"] == "handled" and first["actions"], (label, function)


if __name__ == "__main__":  # record the fixture (only on the code whose decisions are the reference)
    FIXTURE.write_text(
        json.dumps({label: decided(w) for label, w in WORLDS.items()}, indent=1, sort_keys=True) + "\n"
    )
    sys.exit(0)
