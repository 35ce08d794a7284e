"""`gpupool demo`: the Provisioned-AWS story end to end, through the real handlers and adapters.

Runs the README's first Quick start command in-process (`gpupool demo --json`) and checks the
story's end state from what it read back from Kubernetes and moto: every claim reached Bound;
the spike raised capacity above the minimum (a third claim); compaction removed exactly the
surplus, only after the 5-minute new-node protection, leaving the pool at its minimum; the
removed claim's instance is terminated and every live instance belongs to a live claim (no
orphan); nodes match claims. Also: the run is repeatable (same timeline twice); a node that
never joins is failed at the registration timeout, its instance terminated and the gap
refilled (the simulated kubelet's never-join switch, with the real bind and launch handlers),
with the caller's AWS_* variables kept out of the world; and the simulated kubelet registers
nodes as the functions expect them (claim label, GPU label, instance-type and zone labels,
providerID, Ready, GPUNode capacity from the catalog).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from gpupool.adapters.aws.wiring import build_aws_deps
from gpupool.cli.commands.invoke import call_handler, load_function, load_handler
from gpupool.cli.main import main
from gpupool.core.intake.routing import FUNCTIONS
from gpupool.sandbox.demo.provisioned_story import STORIES, ProvisionedStory, Scenario
from gpupool.sandbox.demo.world import DemoWorld

PROTECTION = timedelta(minutes=5)


def _run_demo() -> dict[str, Any]:
    """`gpupool demo --json`, in this process; its stdout parsed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["demo", "--json"])
    assert code == 0, out.getvalue()[-3000:]
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


@pytest.fixture(scope="module")
def demo() -> dict[str, Any]:
    return _run_demo()


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_demo_story_ends_at_the_minimum_with_no_orphan(demo: dict[str, Any]) -> None:
    result = demo
    final = result["final"]
    phases: dict[str, list[str]] = result["claim_phases"]
    # Launch, then the spike: three claims in all, every one of them bound to a node.
    assert len(phases) == 3
    assert all("Bound" in history for history in phases.values()), phases
    # Compaction trimmed back to the minimum (2 × T4 worth): two Bound claims remain.
    assert sorted(final["claims"].values()) == ["Bound", "Bound"]
    removed = [name for name in phases if name not in final["claims"]]
    assert len(removed) == 1
    # Instances: the removed claim's one is terminated; each live one belongs to a live claim.
    live = {i: info for i, info in final["instances"].items() if info["state"] == "running"}
    dead = {i: info for i, info in final["instances"].items() if info["state"] == "terminated"}
    assert sorted(info["claim"] for info in live.values()) == sorted(final["claims"])
    assert [info["claim"] for info in dead.values()] == removed
    assert len(final["instances"]) == 3
    # Nodes: one per live claim, none left for the removed one.
    assert sorted(final["nodes"].values()) == sorted(final["claims"])
    assert final["pool_phase"] == "Running"


def test_compaction_waits_for_the_protection_window(demo: dict[str, Any]) -> None:
    result = demo
    timeline = result["timeline"]
    joined: dict[str, datetime] = {}
    for entry in timeline:
        if entry["actor"] == "kubelet":
            node = entry["summary"].split()[1]
            joined[node] = _at(entry["at"])
    deletions = [
        (_at(entry["at"]), row["node"])
        for entry in timeline
        for row in (entry.get("outcome") or {}).get("applied") or []
        if row.get("action") == "delete-claim" and row.get("result") == "applied"
    ]
    assert len(deletions) == 1
    when, node = deletions[0]
    assert when - joined[node] >= PROTECTION
    # An earlier compaction run saw the young nodes and kept them for that reason.
    reasons = [
        reason
        for entry in timeline
        if _at(entry["at"]) < when
        for reason in ((entry.get("outcome") or {}).get("plan") or {}).get("reasons") or []
    ]
    assert any("protection window" in reason for reason in reasons)


def test_demo_is_repeatable(demo: dict[str, Any]) -> None:
    first, second = demo, _run_demo()
    summaries = [[(e["at"], e["actor"], e["summary"]) for e in run["timeline"]] for run in (first, second)]
    assert summaries[0] == summaries[1]
    assert first["final"] == second["final"]


def test_a_node_that_never_joins_is_failed_terminated_and_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    # The caller's AWS settings (here: a sandbox's endpoint that is down) stay out of the world.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    modules = {name: load_function(name) for name in FUNCTIONS}
    with DemoWorld() as world:
        deps = replace(build_aws_deps(world.environ), clock=world.clock, new_suffix=world.new_suffix)
        handlers = {
            name: load_handler(module, lambda: deps, environ=world.environ)
            for name, module in modules.items()
        }

        def invoke(function: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
            return call_handler(handlers[function], event)

        result = ProvisionedStory(world, invoke, STORIES["never-join"][1]).run()
    assert os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    doomed = next(iter(result.claim_phases))
    history = result.claim_phases[doomed]
    assert "Failed" in history and "Bound" not in history
    doomed_instances = [i for i in result.final.instances.values() if i["claim"] == doomed]
    assert doomed_instances and all(i["state"] == "terminated" for i in doomed_instances)
    bound = [name for name, phase in result.final.claims.items() if phase == "Bound"]
    assert len(bound) == 2 and doomed not in bound  # the gap was refilled by a new claim
    failures = [
        row
        for entry in result.timeline
        for row in (entry.outcome or {}).get("applied") or []
        if row.get("action") == "set-claim-phase"
        and row.get("claim") == doomed
        and "Failed" in row.get("detail", "")
    ]
    assert failures


def test_the_simulated_kubelet_registers_what_a_real_node_and_its_agent_would() -> None:
    modules = {name: load_function(name) for name in FUNCTIONS}
    with DemoWorld() as world:
        deps = replace(build_aws_deps(world.environ), clock=world.clock, new_suffix=world.new_suffix)
        handlers = {
            name: load_handler(module, lambda: deps, environ=world.environ)
            for name, module in modules.items()
        }

        def invoke(function: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
            return call_handler(handlers[function], event)

        short = Scenario(
            duration=timedelta(minutes=2), spike_at=timedelta(hours=1), spike_ends_at=timedelta(hours=2)
        )
        result = ProvisionedStory(world, invoke, short).run()
        nodes = world.objects.list("", "nodes")
        gpu_nodes = {g["metadata"]["name"]: g for g in world.objects.list("tensor-fusion.ai", "gpunodes")}
        gpus = world.objects.list("tensor-fusion.ai", "gpus")
        instances = {i["InstanceId"]: i for i in world.managed_instances()}
    assert len(nodes) == 2 and len(gpus) == 2
    for node in nodes:
        labels = node["metadata"]["labels"]
        claim = labels["tensor-fusion.ai/node-provisioner"]
        assert result.final.claims[claim] == "Bound"
        assert labels["nvidia.com/gpu.present"] == "true"
        zone, instance_id = node["spec"]["providerID"].removeprefix("aws:///").split("/")
        instance = instances[instance_id]
        assert labels["node.kubernetes.io/instance-type"] == instance["InstanceType"] == "g4dn.xlarge"
        assert labels["topology.kubernetes.io/zone"] == zone == instance["Placement"]["AvailabilityZone"]
        assert {"type": "Ready", "status": "True"}.items() <= node["status"]["conditions"][0].items()
        status = gpu_nodes[node["metadata"]["name"]]["status"]
        assert (status["totalTFlops"], status["totalVRAM"], status["totalGPUs"]) == (
            "65",
            "16Gi",
            1,
        )  # one T4
        assert status["nodeInfo"]["instanceID"] == instance_id
