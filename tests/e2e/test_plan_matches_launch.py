"""`gpupool plan` plans exactly what the launch function's dry run would launch, for the same objects.

Over seeded generated states — claims in every phase (Pending with and without an instance,
Creating, Bound, Failed, deleting, interrupted), nodes and GPUNodes present or not, reporting
or not, in-flight offers, warm and min needs, max clipping, gpuRequirements — the pool and its
objects are written to the files `gpupool plan --pool F --state S --json` reads, and loaded
into the fake cluster the real launch handler (`functions/launch/app.py`, through `gpupool
invoke`'s own `load_handler` seam, `dry_run=True`) plans against. The nodes the CLI prints must
equal the new claims' LaunchInstance offerings, node for node (instance type, zone, capacity
type), and so must the gap. The regression case of the review (a Creating claim whose GPUNode
already reports: counted once) is one fixed state among them.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupool.cli.commands.invoke import call_handler, load_function, load_handler, outcome_json
from gpupool.cli.main import main
from gpupool.core.model.base import Condition, ObjectMeta
from gpupool.core.model.claim_state import ANNOTATION_INTERRUPTED
from gpupool.core.model.constants import LABEL_MANAGED_BY, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import Node, NodeStatus
from gpupool.core.model.node import GPUNode, GPUNodeStatus
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.quantity import Quantity
from tests.service.fakes import START, World, make_pool

REPO = Path(__file__).resolve().parents[2]
SCHEDULE_EVENT = json.loads((REPO / "events" / "aws" / "scheduled-event.json").read_text())
OFFERINGS = catalog_offerings("aws", "us-east-1")
CASES = 40
PHASES = ("Pending", "Pending-launched", "Creating", "Bound", "Failed", "deleting", "interrupted")
SIZES = (("65", "16Gi"), ("121", "24Gi"), ("362", "48Gi"), ("31", "16Gi"))


def _claim(name: str, phase: str, size: tuple[str, str]) -> GPUNodeClaim:
    status: dict[str, Any] = {"phase": phase.split("-")[0] if phase.startswith("Pending") else phase}
    if phase in ("deleting", "interrupted"):
        status["phase"] = "Creating"
    if phase != "Pending":
        status["instanceID"] = f"i-{name}"
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {LABEL_MANAGED_BY: "pool-a"},
        "creationTimestamp": START.isoformat(),
        "finalizers": ["tensor-fusion.ai/finalizer"],
    }
    if phase == "deleting":
        metadata["deletionTimestamp"] = START.isoformat()
    if phase == "interrupted":
        metadata["annotations"] = {ANNOTATION_INTERRUPTED: f"spot-interruption {START.isoformat()}"}
    return GPUNodeClaim.model_validate(
        {
            "metadata": metadata,
            "spec": {
                "instanceType": "g6.xlarge",
                "region": "us-east-1",
                "zone": "us-east-1a",
                "capacityType": "OnDemand",
                "tflopsOffered": size[0],
                "vramOffered": size[1],
                "gpuDeviceOffered": 1,
            },
            "status": status,
        }
    )


def _node(name: str, claim: str | None, labels: dict[str, str]) -> Node:
    ready = NodeStatus(conditions=[Condition(type="Ready", status="True")])
    provisioner = {LABEL_NODE_PROVISIONER: claim} if claim else {}
    return Node(metadata=ObjectMeta(name=name, labels={**provisioner, **labels}), status=ready)


def _gpu_node(name: str, size: tuple[str, str], used: float, labels: dict[str, str]) -> GPUNode:
    total_t, total_v = Quantity.parse(size[0]), Quantity.parse(size[1])
    percent = round((1 - used) * 100)
    return GPUNode(
        metadata=ObjectMeta(name=name, labels=labels),
        status=GPUNodeStatus(
            phase="Running",
            total_tflops=total_t,
            total_vram=total_v,
            available_tflops=Quantity((total_t.value * percent) // 100),
            available_vram=Quantity((total_v.value * percent) // 100),
            total_gpus=1,
        ),
    )


def _amount(rng: random.Random, low: int, high: int) -> tuple[str, str]:
    return str(rng.randint(low, high)), f"{rng.randint(low // 8, high // 4)}Gi"


def generated_state(seed: int) -> tuple[GPUPool, list[Any]]:
    """A pool and its objects: claims in every phase, nodes and GPUNodes present or not."""
    rng = random.Random(seed)
    minimum = _amount(rng, 0, 1500)
    warm = _amount(rng, 0, 400) if rng.random() < 0.4 else (None, None)
    maximum = _amount(rng, 100, 2000) if rng.random() < 0.4 else (None, None)
    requirements = rng.choice(
        [
            [],
            [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["OnDemand"]}],
            [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["Spot"]}],
            [{"key": "tensor-fusion.ai/gpu-model", "operator": "In", "values": ["L4", "A10G"]}],
        ]
    )
    pool = make_pool(
        min_tflops=minimum[0],
        min_vram=minimum[1],
        warm_tflops=warm[0],
        warm_vram=warm[1],
        max_tflops=maximum[0],
        max_vram=maximum[1],
        requirements=requirements,
    )
    objects: list[Any] = []
    for index in range(rng.randint(0, 6)):
        name = f"pool-a-{index:02d}"
        size = rng.choice(SIZES)
        objects.append(_claim(name, rng.choice(PHASES), size))
        if rng.random() < 0.6:  # its node joined
            node_name = f"ip-10-0-0-{index}"
            objects.append(_node(node_name, name, {}))
            if rng.random() < 0.7:  # and its GPUNode reports
                objects.append(_gpu_node(node_name, size, rng.random(), {}))
    for index in range(rng.randint(0, 2)):  # nodes of the pool no claim of gpupool's made
        labels = {"tensor-fusion.ai/gpupool": "pool-a"}
        objects.append(_node(f"static-{index}", None, labels))
        objects.append(_gpu_node(f"static-{index}", rng.choice(SIZES), rng.random(), labels))
    return pool, objects


def double_count_state() -> tuple[GPUPool, list[Any]]:
    """The review's case: min 130 TFLOPS, one Creating claim whose GPUNode reports 65 TFLOPS."""
    pool = make_pool(min_tflops="130", min_vram="32Gi")
    claim = _claim("pool-a-00", "Creating", ("65", "16Gi"))
    return pool, [
        claim,
        _node("ip-10-0-0-0", claim.name, {}),
        _gpu_node("ip-10-0-0-0", ("65", "16Gi"), 0, {}),
    ]


def _dump(obj: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def cli_plan(tmp_path: Path, pool: GPUPool, objects: list[Any], capsys: pytest.CaptureFixture[str]) -> Any:
    pool_file, state_file = tmp_path / "pool.yaml", tmp_path / "state.yaml"
    pool_file.write_text(yaml.safe_dump(_dump(pool)), encoding="utf-8")
    state_file.write_text(yaml.safe_dump([_dump(o) for o in objects]), encoding="utf-8")
    argv = ["plan", "--pool", str(pool_file), "--state", str(state_file), "--json", "--region", "us-east-1"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def launch_dry_run(pool: GPUPool, objects: list[Any]) -> dict[str, Any]:
    world = World(pool, offerings=OFFERINGS)
    world.cluster.add(*objects)
    handler = load_handler(load_function("launch"), lambda: world.deps, dry_run=True)
    outcome = outcome_json(call_handler(handler, SCHEDULE_EVENT))
    assert not outcome["errors"]
    assert all(entry["result"] == "dry-run" for entry in outcome["applied"])
    return outcome


def _launched(outcome: dict[str, Any]) -> Counter[tuple[str, str, str]]:
    """New nodes: LaunchInstance actions for the claims this plan creates (not resumed ones)."""
    actions = outcome["plan"]["actions"]
    created = {a["claim"] for a in actions if a["kind"] == "create-claim"}
    return Counter(
        (a["offering"]["instance_type"], a["offering"]["zone"], a["offering"]["capacity_type"])
        for a in actions
        if a["kind"] == "launch-instance" and a["claim"] in created
    )


def _planned(printed: dict[str, Any]) -> Counter[tuple[str, str, str]]:
    counts: Counter[tuple[str, str, str]] = Counter()
    for n in printed["nodes"]:
        counts[(n["instanceType"], n["zone"], n["capacityType"])] += n["count"]
    return counts


def _gap_reason(outcome: dict[str, Any]) -> str | None:
    return next((r for r in outcome["plan"]["reasons"] if "gap " in r), None)


def _assert_same(
    tmp_path: Path, pool: GPUPool, objects: list[Any], capsys: pytest.CaptureFixture[str]
) -> Any:
    printed = cli_plan(tmp_path, pool, objects, capsys)
    outcome = launch_dry_run(pool, objects)
    assert _planned(printed) == _launched(outcome), (printed, outcome["plan"]["reasons"])
    reason = _gap_reason(outcome)
    if reason is not None and printed["nodes"]:
        tflops = Quantity.from_number(printed["gap"]["tflops"])
        assert f"gap {tflops} TFLOPS" in reason, (printed["gap"], reason)
    return printed


def test_the_double_count_case_plans_the_missing_65_tflops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool, objects = double_count_state()
    printed = _assert_same(tmp_path, pool, objects, capsys)
    assert printed["gap"] == {"tflops": 65.0, "vramGiB": 16.0}
    assert printed["nodes"]


@pytest.mark.parametrize("seed", range(CASES))
def test_cli_plan_equals_the_launch_dry_run(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool, objects = generated_state(seed)
    _assert_same(tmp_path, pool, objects, capsys)


def test_the_generated_states_cover_every_phase() -> None:
    """The generator is not vacuous: every phase, nodes with and without GPUNodes, and a
    maxResources all occur among the cases."""
    phases: set[str] = set()
    shapes: set[str] = set()
    for seed in range(CASES):
        pool, objects = generated_state(seed)
        claims = [o for o in objects if isinstance(o, GPUNodeClaim)]
        phases |= {c.status.phase for c in claims if c.status}
        phases |= {"deleting" for c in claims if c.metadata.deletion_timestamp}
        phases |= {"interrupted" for c in claims if ANNOTATION_INTERRUPTED in c.metadata.annotations}
        gpu_names = {o.name for o in objects if isinstance(o, GPUNode)}
        nodes = [o for o in objects if isinstance(o, Node)]
        shapes |= {"node without GPUNode" for n in nodes if n.name not in gpu_names}
        shapes |= {"node with GPUNode" for n in nodes if n.name in gpu_names}
        config = pool.spec.capacity_config
        shapes |= {"max" for _ in [1] if config and config.max_resources}
    assert phases >= {"Pending", "Creating", "Bound", "Failed", "deleting", "interrupted"}
    assert shapes == {"node without GPUNode", "node with GPUNode", "max"}
