"""The scale benchmark's world, small (6 nodes, 2 pools), through the real handlers, service and
Kubernetes adapter on the embedded server: it holds what `benchmarks/scale_world.py` says (a claim,
Node, GPUNode, 8 GPUs and 8 pods per node) and each function finds the work it describes — launch
adds one claim to the last pool, the sweep binds the joining claim of each pool, compaction deletes
the first pool's idle node's claim — so the benchmark's figures measure functions doing real work."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stdout
from datetime import timedelta
from typing import Any

import pytest

from benchmarks.scale import function_deps, scheduled_event
from benchmarks.scale_compute import ScaleCompute
from benchmarks.scale_server import load
from benchmarks.scale_world import NOW, ScaleWorld
from gpupool.handlers.aws_lambda import make_handler
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock

WORLD = ScaleWorld(nodes=6, pools=2)


@pytest.fixture
def served() -> Iterator[tuple[EmbeddedKubeAPI, Any]]:
    clock = ManualClock(NOW - timedelta(days=1))
    with EmbeddedKubeAPI(clock=clock) as api:
        created = load(api, WORLD)
        clock.set(NOW)
        assert created == {
            "gpunodeclasses": 1,
            "gpupools": 2,
            "gpunodeclaims": 6,
            "nodes": 6,
            "gpunodes": 6,
            "gpus": 48,
            "pods": 48,
        }
        cloud = ScaleCompute(WORLD.instances(), cluster="scale", launch_time=NOW)
        yield api, cloud


def _run(function: str, api: EmbeddedKubeAPI, cloud: ScaleCompute) -> dict[str, Any]:
    deps = function_deps(cloud, str(api.kubeconfig_path))
    with redirect_stdout(io.StringIO()):
        return make_handler(function, lambda: deps)(scheduled_event(function), None)  # type: ignore[arg-type]


def _claims(api: EmbeddedKubeAPI) -> dict[str, Any]:
    rt = api.cluster.resolve("tensor-fusion.ai", "v1", "gpunodeclaims")
    return {e.obj["metadata"]["name"]: e.obj for e in api.cluster.store.entries(rt, None)[0]}


def test_each_function_does_the_work_the_world_sets_up(served: tuple[EmbeddedKubeAPI, Any]) -> None:
    api, cloud = served
    before = _claims(api)
    assert _run("launch", api, cloud)["status"] == "handled"
    added = {name: claim for name, claim in _claims(api).items() if name not in before}
    assert [c["metadata"]["labels"]["tensor-fusion.ai/managed-by"] for c in added.values()] == ["pool-1"]
    assert len(cloud.launched) == 1

    joining = {WORLD.claim(i) for i in WORLD.joining_nodes()}
    assert {before[name]["status"]["phase"] for name in joining} == {"Creating"}
    assert _run("bind", api, cloud)["status"] == "handled"
    assert {_claims(api)[name]["status"]["phase"] for name in joining} == {"Bound"}

    assert _run("compact", api, cloud)["status"] == "handled"
    deleting = [n for n, c in _claims(api).items() if c["metadata"].get("deletionTimestamp")]
    assert deleting == [WORLD.claim(WORLD.idle_node())]
