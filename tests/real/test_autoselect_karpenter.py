"""AutoSelect against the real Karpenter (v1.15.0, its KWOK provider, gpupool's catalog), with the
pods placed by the real tensor-fusion-scheduler through the relay's extender (issue 34).

The world: TensorFusion's documented NodePool — template labels with `nvidia.com/gpu.present`,
`limits: nvidia.com/gpu`, `WhenEmpty` with a short `consolidateAfter`, `minValues` on the instance
type — a GPUPool in AutoSelect mode whose nodeSelector is that NodePool and whose warm reserve is
one T4, the relay and a second kube-scheduler with the chart's KubeSchedulerConfiguration running
as the chart's ServiceAccount (`tests/real/scheduler_process.py`, as the extender story does),
and the deployed launch and compact handlers called in-process (`functions_world`).

Covers, in order (one story):
- a seed pod asking a whole `nvidia.com/gpu` makes Karpenter itself launch the template node;
- 30 TensorFusion pods of mixed fractional sizes (2, 4 and 8 GiB): the scheduler asks the extender,
  the few the template's GPU holds are bound, the rest are Unschedulable; launch (what the relay's
  forwarded `pod.unschedulable` asks for, here a pool-scoped schedule tick) expands: every
  expansion NodeClaim is accepted by the real API server (CRD rules, `minValues`, the NodePool
  owner), carries the template's labels and never `karpenter.sh/do-not-disrupt`, and the
  NodePool's GPUs, existing + expansions, stay within its limit; the pods share nodes (far fewer
  nodes than pods);
- every expansion node gets its GPUNode and GPU objects, and **every pod reaches Running through
  the extender** (bound by the relay, with `tensor-fusion.ai/gpu-ids` naming GPUs of its node);
- the pods (and the seed) deleted, one compaction (clock past the 5-minute protection): every node
  beyond the warm reserve is labelled should-delete and Karpenter's own consolidation removes it
  within `consolidateAfter` plus one compaction period; the node warm needs carries
  `karpenter.sh/do-not-disrupt` (gpupool's marker saying why) and stays.

No node agent runs here: for each node Karpenter registers, the test does what the agent and
TensorFusion's operator would — the GPUNode labelled with the pool whose nodeSelector selects the
node (the operator's part), then the agent's own `Publisher` over a fake NVML listing the GPUs the
catalog gives the node's instance type (model name, count, memory), which writes the GPU objects
and the GPUNode status. While the pods wait, compaction runs as its schedule would, so young idle
expansions carry the protection guard and Karpenter cannot take them before the pods land.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gpupool.core.model.constants import LABEL_EXPANSION_SOURCE, LABEL_SHOULD_DELETE
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.programs import require_built
from tests.real.functions_world import FunctionsWorld, functions_world, run_node_agent
from tests.real.karpenter_builders import (
    autoselect_spec,
    ensure_kwok_node_class,
    namespace_with_account,
    pool_manifests,
    pool_tick,
    scheduling_pair,
    tensor_fusion_nodepool,
    tensor_fusion_worker,
)
from tests.real.relay_process import RelayProcess, call, wait_for
from tests.real.scheduler_process import SchedulerProcess

T = "tensor-fusion.ai/"
GIB = 1024**3
CLUSTER = "as-story"
POOL = f"{CLUSTER}-auto"
LIMIT = 12
SIZES = ("4Gi", "8Gi", "2Gi", "2Gi")  # 30 pods: 124 GiB, 8 T4s at the least; one per pod would be 30
CONSOLIDATE_AFTER_S = 30
COMPACTION_PERIOD_S = 30
GUARDED_FOR = "gpupool.io/do-not-disrupt-for"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def _tf_pod(name: str, vram: str) -> dict[str, Any]:
    return tensor_fusion_worker(
        name, pool=POOL, tflops="5", vram=vram, extra={T + "qos": "high", T + "isolation": "soft"}
    )


@dataclass
class Story:
    plane: ControlPlane
    world: FunctionsWorld
    namespace: str
    nodepool: str
    root: Path
    relay: RelayProcess
    scheduler: SchedulerProcess
    published: dict[str, list[str]] = field(default_factory=dict)  # node → its GPU objects

    @property
    def pods(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    def tick(self, function: str) -> dict[str, Any]:
        """The pool's schedule tick for `function` (EventBridge Scheduler with the pool as input)."""
        return self.world.invoke(function, pool_tick(function, POOL))

    def nodeclaims(self) -> list[dict[str, Any]]:
        return [
            c
            for c in self.plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]
            if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == self.nodepool
        ]

    def nodes(self) -> dict[str, dict[str, Any]]:
        selector = f"karpenter.sh%2Fnodepool%3D{self.nodepool}"
        return {
            n["metadata"]["name"]: n
            for n in self.plane.request("GET", f"/api/v1/nodes?labelSelector={selector}")["items"]
        }

    def run_agent(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        self.published[name] = run_node_agent(
            self.plane, node, pool=POOL, nvml_file=self.root / f"{name}-nvml.json"
        )

    def agents_for_new_nodes(self) -> list[str]:
        """Run the agent on every registered, untainted node of the NodePool that has none yet."""
        started = []
        for name, node in self.nodes().items():
            if name in self.published:
                continue
            taints = {t["key"] for t in node["spec"].get("taints") or []}
            ready = any(
                c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or []
            )
            if ready and "karpenter.sh/unregistered" not in taints:
                self.run_agent(node)
                started.append(name)
        return started


def _pod_phases(story: Story) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["status"].get("phase", "")
        for p in story.plane.request("GET", story.pods)["items"]
        if p["metadata"]["name"].startswith("w-")
    }


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
        for c in pod["status"].get("conditions") or []
    )


@pytest.fixture(scope="module")
def story(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    require_built("kube-scheduler", "kwok", "karpenter-kwok")
    plane = control_plane
    root: Path = tmp_path_factory.mktemp("autoselect")
    suffix = uuid.uuid4().hex[:6]
    namespace, nodepool = f"as-{suffix}", f"tf-{suffix}"
    ensure_kwok_node_class(plane)
    manifests = pool_manifests(
        CLUSTER,
        "auto",
        autoselect_spec(
            nodepool, compaction_period_s=COMPACTION_PERIOD_S, warm={"tflops": "65", "vram": "16Gi"}
        ),
    )
    with contextlib.ExitStack() as cleanup:  # undone in reverse, whatever failed
        cleanup.enter_context(namespace_with_account(plane, namespace))
        plane.request(
            "POST",
            "/apis/karpenter.sh/v1/nodepools",
            tensor_fusion_nodepool(nodepool, limit=LIMIT, consolidate_after_s=CONSOLIDATE_AFTER_S),
        )
        # Deleting the NodePool makes Karpenter delete its NodeClaims and their nodes.
        cleanup.callback(call, plane, "DELETE", f"/apis/karpenter.sh/v1/nodepools/{nodepool}")
        world = cleanup.enter_context(functions_world(plane, cluster=CLUSTER, manifests=manifests))
        cleanup.callback(call, plane, "DELETE", f"/apis/tensor-fusion.ai/v1/tensorfusionclusters/{CLUSTER}")
        cleanup.callback(call, plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpupools/{POOL}")
        relay, scheduler = cleanup.enter_context(scheduling_pair(plane, root, namespace=namespace))
        made = Story(plane, world, namespace, nodepool, root, relay, scheduler)

        def _forget_gpus() -> None:
            for node, gpus in made.published.items():
                call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpunodes/{node}")
                for gpu in gpus:
                    call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpus/{gpu}")

        cleanup.callback(_forget_gpus)
        yield made


@pytest.mark.timeout(600)
def test_pods_run_through_the_extender_on_packed_expansions_and_karpenter_removes_what_gpupool_lets_go(
    story: Story,
) -> None:
    plane, started = story.plane, time.monotonic()
    seed = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "seed"},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": story.nodepool},
            # The taint-eviction controller can read the node's startup NoExecute taint after the
            # scheduler bound the pod (seen once in the benchmark): the template would go empty.
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/none:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    plane.request("POST", story.pods, seed)
    seeded = wait_for(
        "Karpenter to launch the template node for the seed pod",
        lambda: (p := plane.request("GET", f"{story.pods}/seed"))["status"].get("phase") == "Running" and p,
        timeout=180,
        every=2,
    )
    template = seeded["spec"]["nodeName"]
    story.run_agent(story.nodes()[template])

    for i in range(30):
        status, answer = call(plane, "POST", story.pods, _tf_pod(f"w-{i:02d}", SIZES[i % len(SIZES)]))
        assert status == 201, answer
    wait_for(
        "the scheduler to bind what the template holds and report the rest Unschedulable",
        lambda: all(
            p["spec"].get("nodeName") or _unschedulable(p)
            for p in plane.request("GET", story.pods)["items"]
            if p["metadata"]["name"].startswith("w-")
        ),
        timeout=60,
    )

    # The expansion rounds, as the schedule and the relay's forwarded events drive them.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        phases = _pod_phases(story)
        if len(phases) == 30 and all(p == "Running" for p in phases.values()):
            break
        story.tick("launch")
        if story.agents_for_new_nodes():
            story.tick("compact")  # guards the young, still idle expansions (protection window)
        time.sleep(3)
    phases = _pod_phases(story)
    waiting = sorted(name for name, phase in phases.items() if phase != "Running")
    assert not waiting, (waiting, story.scheduler.tail())
    ran_in = time.monotonic() - started

    def every_expansion_reported() -> bool:  # one made late (a pod that waited past the grace) too
        story.agents_for_new_nodes()
        return all(c["status"].get("nodeName") in story.published for c in story.nodeclaims())

    wait_for("the agent on every expansion's node", every_expansion_reported, timeout=120, every=2)

    # Running through the extender, each on a GPU of its own node.
    nodes = story.nodes()
    for pod in plane.request("GET", story.pods)["items"]:
        if not pod["metadata"]["name"].startswith("w-"):
            continue
        node = pod["spec"]["nodeName"]
        assert node in nodes, f"{pod['metadata']['name']} ran on {node}, not a node of the NodePool"
        gpu_ids = pod["metadata"]["annotations"][T + "gpu-ids"].split(",")
        assert set(gpu_ids) <= set(story.published[node]), (gpu_ids, node)
    calls = story.relay.log.read_text()
    for verb in ("filter", "bind"):
        assert f'"POST /scheduler/{verb} HTTP/1.1" 200' in calls, verb

    # The expansions: the NodePool's own, within its limit, packed, each with its GPUNode.
    claims = story.nodeclaims()
    expansions = [c for c in claims if LABEL_EXPANSION_SOURCE in c["metadata"].get("labels", {})]
    assert expansions, "AutoSelect made no NodeClaim"
    for claim in expansions:
        assert claim["metadata"]["ownerReferences"][0]["name"] == story.nodepool
        assert DO_NOT_DISRUPT not in claim["metadata"].get("annotations", {})
        node = nodes[claim["status"]["nodeName"]]
        assert node["metadata"]["labels"]["nvidia.com/gpu.present"] == "true", "the template's label"
        assert node["metadata"]["labels"][T + "enabled"] == "true"
        assert plane._exists(f"/apis/tensor-fusion.ai/v1/gpunodes/{node['metadata']['name']}")
    gpus = sum(int(c["status"].get("capacity", {}).get("nvidia.com/gpu", "0")) for c in claims)
    assert gpus <= LIMIT, f"{gpus} GPUs in the NodePool, limit {LIMIT}"
    assert len(expansions) <= LIMIT - 1 and len(expansions) < 15, "pods share nodes"
    print(f"30 pods Running on {len(claims)} node(s) ({len(expansions)} expansions) after {ran_in:.0f} s")

    # The ramp down: every node beyond warm goes, by Karpenter's consolidation; warm's node stays.
    for pod in plane.request("GET", story.pods)["items"]:
        plane.request("DELETE", f"{story.pods}/{pod['metadata']['name']}?gracePeriodSeconds=0")
    wait_for("the pods to be gone", lambda: not plane.request("GET", story.pods)["items"], timeout=60)
    deleted_at = time.monotonic()
    story.world.clock.ahead = timedelta(minutes=6)  # past the 5-minute protection
    story.tick("compact")
    nodes = story.nodes()
    let_go = {n for n, node in nodes.items() if node["metadata"]["labels"].get(LABEL_SHOULD_DELETE) == "true"}
    kept = set(nodes) - let_go
    assert len(kept) == 1, f"warm is one T4: one node kept, not {sorted(kept)}"
    (warm,) = kept
    notes = nodes[warm]["metadata"].get("annotations", {})
    assert notes.get(DO_NOT_DISRUPT) == "true" and notes.get(GUARDED_FOR) == "warm-min", notes
    for name in let_go:
        assert DO_NOT_DISRUPT not in nodes[name]["metadata"].get("annotations", {}), name
    wait_for(
        "Karpenter to consolidate every node gpupool let go",
        lambda: not (let_go & set(story.nodes())),
        timeout=CONSOLIDATE_AFTER_S + COMPACTION_PERIOD_S + 120,
        every=2,
    )
    took = time.monotonic() - deleted_at
    assert set(story.nodes()) == {warm}, "the node warm needs stays"
    print(
        f"{len(let_go)} node(s) consolidated {took:.0f} s after the pods were deleted; {warm} kept for warm"
    )
    bound = CONSOLIDATE_AFTER_S + COMPACTION_PERIOD_S
    assert took <= bound + 30, (
        f"removed {took:.0f} s after: consolidateAfter + one period = {bound} s (+30 s)"
    )
