"""Karpenter alone against gpupool AutoSelect and gpupool Karpenter mode, on the real control plane,
for the same demand.

One real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK and
Karpenter v1.15.0 with its KWOK provider, as `gpupool sandbox build` builds them), and per demand
and arm a fresh run with the same timeline: --pods pods created evenly over --ramp seconds, each
deleted --hold seconds after it was created; then nothing until the arm has settled (no NodeClaim
left; for (c), only its warm reserve's) or --drain seconds passed. Arms (a) and (b) share
TensorFusion's documented NodePool (`tests/real/karpenter_builders.py`: template labels,
`limits: nvidia.com/gpu`, `WhenEmpty` after a short `consolidateAfter`, `minValues` on the
instance type, g4dn/g5/g6.xlarge) and start with a seed pod asking one whole GPU (it gives
AutoSelect its template), deleted with the last pod.

- (a) Karpenter alone: each pod asks whole `nvidia.com/gpu` (its fraction rounded up) of the
  default scheduler; Karpenter provisions and consolidates on its own. No gpupool code runs.
- (b) gpupool AutoSelect: each pod is a TensorFusion worker asking its fraction of a GPU's VRAM
  and TFLOPS, placed by tensor-fusion-scheduler through the relay's extender (the chart's
  configuration and RBAC); the deployed handlers run in-process, triggered as on a cluster:
  launch on each `pod.unschedulable` the relay forwards — HMAC-signed, after its batching
  window (1 s idle, 10 s at most: Karpenter's own) — to the launch function's URL, and on its
  schedule tick every --launch-tick seconds (the template's `rate(1 minute)`, not compressed:
  Karpenter's batching and the pods' waits are real time too); compact on a schedule tick every
  --tick seconds (the pool's nodeCompaction period and gpupool's 5-minute new-node protection
  compressed to --tick and 15 s, as Karpenter's consolidateAfter is to 10 s).
- (c) gpupool Karpenter mode: the same pods and scheduling; the pool launches its own NodeClaims
  (no NodePool: its gpuRequirements name the same instance types, on-demand) to keep a warm
  reserve of --warm-gpus T4s of free TFLOPS and VRAM — TensorFusion's Karpenter mode scales on
  minResources / warmResources, not on pending pods —, launch and bind on the relay's
  deliveries and their 1-minute ticks, compact on the compressed one;
  compaction removes idle nodes beyond warm. Its warm nodes stay when the pods are gone (as warm
  asks): they are counted until the run ends and shown as left. It has no NodePool: its GPUs are
  polled against the same GPU limit as the other arms'.

In (b) and (c) the node agent's part runs for each node the arm gets (`NodeAgents` in
`tests/real/functions_world.py`): the GPUNode and GPUs as soon as a Node watch shows the node
Ready and registered, then every tick the agent's own `Publisher` over a fake NVML with the
node's workers read from its pods, so the GPUs' available capacity follows the pods placed. The
ticks, the agents and the function URL run on their own threads, beside the demand; a pod's
binding and first Running are read from a watch of the pods (all arms alike), so the waits are
not rounded to the one-second loop that creates and deletes the pods.

Demands: `inference` — pods asking 1/4 to 1/2 of a GPU (seeded); `openb` — pods drawn (seeded)
from openb's pod list (Alibaba cluster-trace-gpu-v2023: /work/shared/data/openb/ if there, else
the openb-shaped sample shipped in `gpupool.simulation.traces`), GPU pods only, with their mix of
fractional (gpu_milli), whole and multi-GPU requests (a pod asking more GPUs than one of the
NodePool's types has can run in no arm; the report names such pods).

It prints, per demand and arm: node-hours and cost (each NodeClaim from its creation to its
deletion, priced at the catalog's on-demand price of the instance type it launched), GPU-hours
allocated, pending→Running p50 / p95 of the demand's pods (pods that never ran are counted apart),
how often the arm's GPUs were over the NodePool's limit when polled, and the NodeClaims left when
the run ended — each gpupool figure also as a ratio of Karpenter alone's; and the demand's packing
floor: the node-hours of one-GPU nodes holding, second by second, the ceiling of the GPUs the live
pods ask. --timeline N prints, per arm, the N slowest pods' waits step by step (created, their
node's NodeClaim first seen by the one-second poll, Node Ready, GPUs published, bound, Running).
Time is compressed (seconds stand for hours): ratios compare, absolute node-hours do not.

What it leaves out: a real node agent (no enforcement, no device plugin, no image pull before
it starts: Karpenter alone's KWOK nodes report `nvidia.com/gpu` at once too); Lambda's front
(the function URL calls the handler in-process, one invocation at a time); more than one run per
arm (the figures move from run to run with Karpenter's and the scheduler's timing). The default
is 40 pods over 40 s, a few minutes per arm; `--pods 300 --ramp 300` is the few-hundred-pod run
(about 8 minutes per arm).

    .venv/bin/python -m benchmarks.karpenter_vs_gpupool [--pods 40] [--demand inference|openb|both]
        [--arms karpenter,autoselect,karpenter-mode] [--ramp 40] [--hold 60] [--tick 3]
        [--launch-tick 60] [--warm-gpus 2] [--seed 34] [--timeline N] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import json
import math
import random
import ssl
import statistics
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from gpupool.core.catalog import load_catalog
from gpupool.sandbox.cluster.controlplane import ControlPlane
from gpupool.sandbox.demo.clouds import create_demo_network
from gpupool.sandbox.moto_ec2 import MotoEC2
from gpupool.simulation.traces import sample_paths
from tests.real.functions_world import FunctionsWorld, NodeAgents, function_url
from tests.real.karpenter_builders import (
    GPU_TYPES,
    autoselect_spec,
    ensure_kwok_node_class,
    karpenter_mode_spec,
    namespace_with_account,
    pool_manifests,
    pool_tick,
    scheduling_pair,
    tensor_fusion_nodepool,
    tensor_fusion_worker,
)
from tests.real.relay_process import call

TEMPLATE_VRAM_GIB, TEMPLATE_TFLOPS = 16, 65  # g4dn.xlarge, the cheapest of GPU_TYPES: one T4
ARM_LABEL = "gpupool.bench/arm"  # on arm (c)'s nodes (its pool's gpuNodeLabels): which run they belong to
CONSOLIDATE_AFTER_S = 10
OPENB = Path("/work/shared/data/openb/openb_pod_list_default.csv")


@dataclass(frozen=True)
class PodDemand:
    name: str
    gpus: int  # whole GPUs (1 with a fraction below)
    fraction: Fraction  # of one GPU, 1 for whole GPUs
    start: float  # seconds after the run starts
    end: float


def inference_demand(pods: int, *, ramp: float, hold: float, rng: random.Random) -> list[PodDemand]:
    return [
        PodDemand(f"w-{i:03d}", 1, Fraction(rng.choice((25, 30, 35, 40, 45, 50)), 100), s, s + hold)
        for i in range(pods)
        for s in [ramp * i / pods]
    ]


def openb_demand(pods: int, *, ramp: float, hold: float, rng: random.Random) -> list[PodDemand]:
    path = OPENB if OPENB.exists() else sample_paths()[1]
    with path.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if int(r["num_gpu"]) >= 1]
    chosen = rng.sample(rows, pods)
    out = []
    for i, row in enumerate(chosen):
        gpus, milli = int(row["num_gpu"]), int(row["gpu_milli"])
        fraction = Fraction(milli, 1000) if gpus == 1 and 0 < milli < 1000 else Fraction(1)
        start = ramp * i / pods
        out.append(PodDemand(f"w-{i:03d}", gpus, fraction, start, start + hold))
    return out


def packing_floor(demand: list[PodDemand]) -> float:
    """Node-hours of one-GPU nodes holding, each second, ceil(Σ GPUs the live pods ask)."""
    end = max(d.end for d in demand)
    seconds = 0
    for t in range(math.ceil(end)):
        asked = sum(d.gpus * d.fraction for d in demand if d.start <= t < d.end)
        seconds += math.ceil(asked)
    return seconds / 3600


def whole_gpu_pod(d: PodDemand, nodepool_name: str) -> dict[str, Any]:
    gpus = d.gpus if d.fraction == 1 else 1
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": d.name},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": nodepool_name},
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/w:1",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


def tensor_fusion_pod(d: PodDemand, pool: str) -> dict[str, Any]:
    """The pod's share of the template's GPU (a T4), as a TensorFusion worker."""
    vram = f"{int(d.fraction * TEMPLATE_VRAM_GIB * 1024)}Mi"
    tflops = str(round(float(d.fraction * TEMPLATE_TFLOPS), 2))
    return tensor_fusion_worker(d.name, pool=pool, tflops=tflops, vram=vram, gpu_count=d.gpus)


@dataclass
class Ledger:
    """What one arm's run saw — its NodeClaims and Nodes are those labelled `key=value` —:
    NodeClaims' lives and limit breaches (polled each second), pods' creation, binding and first
    Running and Nodes' Ready (from watches, as the API server reports them), and each pod's
    timeline. Times are seconds on the ledger's clock (`now`), which starts when it is made."""

    limit: int
    key: str
    value: str
    t0: float = field(default_factory=time.monotonic)
    born: dict[str, float] = field(default_factory=dict)
    died: dict[str, float] = field(default_factory=dict)
    gpus: dict[str, int] = field(default_factory=dict)
    price: dict[str, float] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    running: dict[str, float] = field(default_factory=dict)
    breaches: int = 0
    # The timeline of each pod's wait (`timeline`): where it was bound, when its node's
    # NodeClaim was created, when the Node turned Ready, when its GPUs were published.
    bound: dict[str, tuple[float, str]] = field(default_factory=dict)
    claim_of_node: dict[str, str] = field(default_factory=dict)
    node_ready: dict[str, float] = field(default_factory=dict)
    gpus_published: dict[str, float] = field(default_factory=dict)
    # What failed beside the demand (a schedule tick whose invocation reported errors, an agent
    # round): counted and shown, the run going on as the next tick would on a cluster.
    failures: list[str] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.t0

    @property
    def selector(self) -> str:
        return f"{self.key}={self.value}".replace("/", "%2F").replace("=", "%3D")

    def nodes(self, plane: ControlPlane) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = plane.request("GET", f"/api/v1/nodes?labelSelector={self.selector}")[
            "items"
        ]
        return items

    def seen_pod(self, kind: str, pod: dict[str, Any]) -> None:
        """A watched pod of the run's namespace: when it was first bound, and first Running."""
        now, name = self.now(), pod["metadata"]["name"]
        if kind == "DELETED":
            return
        if pod["spec"].get("nodeName"):
            self.bound.setdefault(name, (now, pod["spec"]["nodeName"]))
        if (pod.get("status") or {}).get("phase") == "Running":
            self.running.setdefault(name, now)

    def seen_node(self, kind: str, node: dict[str, Any]) -> None:
        """A watched Node of the arm: when it first turned Ready."""
        if kind != "DELETED" and _ready(node):
            self.node_ready.setdefault(node["metadata"]["name"], self.now())

    def poll(self, plane: ControlPlane) -> int:
        """The arm's NodeClaims now: their lives, GPUs and prices, and whether they pass the limit."""
        now = self.now()
        prices = load_catalog("aws")
        live = set()
        for c in plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]:
            if c["metadata"].get("labels", {}).get(self.key) != self.value:
                continue
            name = c["metadata"]["name"]
            live.add(name)
            self.born.setdefault(name, now)
            capacity = (c.get("status") or {}).get("capacity") or {}
            if "nvidia.com/gpu" in capacity:
                self.gpus[name] = int(capacity["nvidia.com/gpu"])
            if (c.get("status") or {}).get("nodeName"):
                self.claim_of_node[c["status"]["nodeName"]] = name
            kind = c["metadata"].get("labels", {}).get("node.kubernetes.io/instance-type")
            if kind and name not in self.price:
                self.price[name] = float(prices.prices("us-east-1", kind).get("on-demand", 0))
        for name in self.born:
            if name not in live:
                self.died.setdefault(name, now)
        if sum(self.gpus.get(n, 1) for n in live) > self.limit:
            self.breaches += 1
        return len(live)

    def timeline(self, slowest: int) -> list[str]:
        """The `slowest` pods' waits, step by step (seconds after the run started; '-' unseen)."""

        def at(value: float | None) -> str:
            return "-" if value is None else f"{value:.0f}"

        waits = {n: self.running.get(n, math.inf) - c for n, c in self.created.items() if n != "seed"}
        lines = ["pod      wait  created  claim  ready  gpus  bound  running  node"]
        for name in sorted(waits, key=lambda n: -waits[n])[:slowest]:
            bound_at, node = self.bound.get(name, (None, ""))
            claim = self.claim_of_node.get(node)
            lines.append(
                f"{name:8} {waits[name]:5.0f} {at(self.created[name]):>8} "
                f"{at(self.born.get(claim) if claim else None):>6} {at(self.node_ready.get(node)):>6} "
                f"{at(self.gpus_published.get(node)):>5} {at(bound_at):>6} "
                f"{at(self.running.get(name)):>8}  {node}"
            )
        return lines

    def figures(self, end: float) -> dict[str, float]:
        lives = {n: self.died.get(n, end) - b for n, b in self.born.items()}
        demand = [n for n in self.created if n != "seed"]
        waits = sorted(self.running[n] - self.created[n] for n in demand if n in self.running)
        return {
            "node_hours": sum(lives.values()) / 3600,
            "cost": sum(lives[n] / 3600 * self.price.get(n, 0) for n in lives),
            "gpu_hours": sum(lives[n] / 3600 * self.gpus.get(n, 1) for n in lives),
            "p50": statistics.median(waits) if waits else math.inf,
            "p95": waits[min(len(waits) - 1, math.ceil(0.95 * len(waits)) - 1)] if waits else math.inf,
            "never_ran": len([n for n in demand if n not in self.running]),
            "breaches": self.breaches,
            "left": len([n for n in self.born if n not in self.died]),
            "failures": len(self.failures),
        }


def _ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or [])


def seed_pod(nodepool_name: str) -> dict[str, Any]:
    """One whole GPU of the NodePool's default scheduler: Karpenter launches AutoSelect's template."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "seed"},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": nodepool_name},
            "terminationGracePeriodSeconds": 0,
            # The taint-eviction controller can read the node's startup NoExecute taint after the
            # scheduler bound the pod (seen once): the template would go empty and be consolidated.
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/seed:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }


@contextlib.contextmanager
def watching(plane: ControlPlane, path: str, seen: Callable[[str, dict[str, Any]], None]) -> Iterator[None]:
    """Every object at the list URL `path` handed to `seen(type, object)` as the API server's
    watch reports it — first the listing, as ADDED — on a thread, until the block ends (within
    the watch's 5-second timeout, after which it watches on from the last version seen); a watch
    that breaks or expires lists again."""
    stop = threading.Event()
    context = ssl.create_default_context(cafile=str(plane.pki.ca_cert))
    separator = "&" if "?" in path else "?"

    def run() -> None:
        version = ""
        while not stop.is_set():
            try:
                if not version:
                    listing = plane.request("GET", path)
                    for item in listing["items"]:
                        seen("ADDED", item)
                    version = listing["metadata"]["resourceVersion"]
                request = urllib.request.Request(
                    f"{plane.url}{path}{separator}watch=1&allowWatchBookmarks=true&timeoutSeconds=5"
                    f"&resourceVersion={version}",
                    headers={"Authorization": f"Bearer {plane.token}"},
                )
                with urllib.request.urlopen(request, context=context, timeout=30) as stream:
                    for line in stream:
                        event = json.loads(line)
                        if event["type"] == "ERROR":  # expired: list again
                            version = ""
                            break
                        version = event["object"]["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            seen(event["type"], event["object"])
            except (OSError, ValueError, KeyError):
                version = ""
                stop.wait(0.2)

    thread = threading.Thread(target=run, name=f"watch {path}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=35)


def play(
    plane: ControlPlane,
    demand: list[PodDemand],
    *,
    namespace: str,
    ledger: Ledger,
    make_pod: Callable[[PodDemand], dict[str, Any]],
    drain: float,
    seed: dict[str, Any] | None,
    settled: int = 0,
) -> float:
    """Create `seed` and wait for it to run (at most 180 s), then the demand's pods on its
    timeline, each second; the run ends once every pod is gone and the arm has `settled`
    NodeClaims or fewer (0: empty; arm (c) keeps its warm nodes), or `drain` seconds after the
    last pod's end. The pods and the arm's Nodes are watched the whole time."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    with (
        watching(plane, pods, ledger.seen_pod),
        watching(plane, f"/api/v1/nodes?labelSelector={ledger.selector}", ledger.seen_node),
    ):
        start = ledger.now()
        if seed is not None:
            plane.request("POST", pods, seed)
            ledger.created["seed"] = ledger.now()
            while "seed" not in ledger.running and ledger.now() - start < 180:  # the template
                ledger.poll(plane)
                time.sleep(1)
        offset = ledger.now()
        todo = sorted(demand, key=lambda d: d.start)
        ends = sorted(demand, key=lambda d: d.end)
        last_end = offset + ends[-1].end
        while True:
            while todo and offset + todo[0].start <= ledger.now():
                d = todo.pop(0)
                ledger.created[d.name] = ledger.now()
                plane.request("POST", pods, make_pod(d))
            while ends and offset + ends[0].end <= ledger.now():
                call(plane, "DELETE", f"{pods}/{ends.pop(0).name}")
            if not ends and "seed" in ledger.created:
                call(plane, "DELETE", f"{pods}/seed")
            live = ledger.poll(plane)
            now = ledger.now()
            if not ends and (live <= settled or now > last_end + drain):
                return now
            pause = min([1.0] + [offset + d.start - now for d in todo[:1]])
            time.sleep(max(0.05, pause))


def run_karpenter_alone(
    plane: ControlPlane, demand: list[PodDemand], *, limit: int, drain: float, timeline: int = 0
) -> dict[str, float]:
    suffix = uuid.uuid4().hex[:4]
    namespace, name = f"ka-{suffix}", f"ka{suffix}"
    ledger = Ledger(limit, "karpenter.sh/nodepool", name)
    with namespace_with_account(plane, namespace):
        nodepool = tensor_fusion_nodepool(name, limit=limit, consolidate_after_s=CONSOLIDATE_AFTER_S)
        plane.request("POST", "/apis/karpenter.sh/v1/nodepools", nodepool)
        try:
            end = play(
                plane,
                demand,
                namespace=namespace,
                ledger=ledger,
                make_pod=lambda d: whole_gpu_pod(d, name),
                drain=drain,
                seed=seed_pod(name),
            )
            print("\n".join(ledger.timeline(timeline)) if timeline else "", flush=True)
            return ledger.figures(end)
        finally:
            call(plane, "DELETE", f"/apis/karpenter.sh/v1/nodepools/{name}")


HMAC_SECRET = "benchmark-relay-secret"  # the relay's and the functions' shared secret (hmac)


class CompressedWorld(FunctionsWorld):
    """The functions with gpupool's 5-minute new-node protection compressed to 15 s, taking the
    relay's deliveries signed with `HMAC_SECRET`."""

    @property
    def env(self) -> dict[str, str]:
        return {
            **super().env,
            "GPUPOOL_NEW_NODE_PROTECTION": "15s",
            "GPUPOOL_HTTP_AUTH": "hmac",
            "GPUPOOL_RELAY_HMAC_SECRET": HMAC_SECRET,
        }


@contextlib.contextmanager
def gpupool_world(
    plane: ControlPlane,
    root: Path,
    *,
    namespace: str,
    cluster: str,
    manifests: list[dict[str, Any]],
    forwarded: tuple[str, ...],
    invocations: threading.Lock,
) -> Iterator[CompressedWorld]:
    """The pool's manifests applied, moto's EC2 with the demo network, a function URL for each of
    `forwarded` and the scheduling pair, the relay forwarding its events for those functions
    (`pod.unschedulable` to launch; the node and claim events to bind) to their URLs, HMAC-signed,
    through its batching windows as deployed — what triggers the functions on a cluster, besides
    their schedule."""
    with contextlib.ExitStack() as stack, MotoEC2() as moto:
        for manifest in manifests:
            plural = {"GPUPool": "gpupools", "TensorFusionCluster": "tensorfusionclusters"}[manifest["kind"]]
            path = f"/apis/tensor-fusion.ai/v1/{plural}/{manifest['metadata']['name']}"
            plane.apply(manifest, path=path)
            stack.callback(call, plane, "DELETE", path)
        world = CompressedWorld(plane, moto.url, cluster)
        create_demo_network(world.ec2())
        secret = root / "relay-hmac-secret"
        secret.write_text(HMAC_SECRET)
        relay_args = ["--forward-auth", "hmac", "--hmac-secret-file", str(secret), "--cluster", cluster]
        for function in forwarded:
            url = stack.enter_context(function_url(world, function, lock=invocations))
            relay_args += ["--forward", f"{function}={url}"]
        stack.enter_context(scheduling_pair(plane, root, namespace=namespace, relay_args=relay_args))
        yield world


@contextlib.contextmanager
def gpupool_driving(
    plane: ControlPlane,
    world: CompressedWorld,
    ledger: Ledger,
    agents: NodeAgents,
    *,
    pool: str,
    tick: float,
    schedule: dict[str, float],
    invocations: threading.Lock,
) -> Iterator[None]:
    """What runs beside the demand for a gpupool arm, on threads, until the block ends: the node
    agent started on each of the arm's nodes as soon as the Node watch shows it Ready and
    registered (a DaemonSet pod's start, without its image pull); every `tick` seconds one agent
    round on each node (its GPUs' available capacity after the pods placed); each function of
    `schedule` on the pool's schedule tick every so many seconds, under `invocations` (the
    function URLs take it too)."""
    stop = threading.Event()

    def node_seen(kind: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        taints = {t["key"] for t in node["spec"].get("taints") or []}
        if (
            kind != "DELETED"
            and name not in agents.started
            and _ready(node)
            and "karpenter.sh/unregistered" not in taints
        ):
            agents.start(node)
            ledger.gpus_published[name] = ledger.now()

    def guarded(what: str, step: Callable[[], object]) -> None:
        try:
            step()
        except Exception as failed:  # counted and reported; the next tick runs, as on a cluster
            ledger.failures.append(f"{what} at {ledger.now():.0f} s: {str(failed)[:300]}")

    def ticks() -> None:
        due = {"agents": tick, **schedule}
        started = time.monotonic()
        while not stop.wait(0.1):
            now = time.monotonic() - started
            if now >= due["agents"]:
                due["agents"] += tick
                guarded("agent round", agents.round)
            for function, period in schedule.items():
                if now >= due[function]:
                    due[function] += period
                    with invocations:
                        guarded(
                            f"{function} tick",
                            functools.partial(world.invoke, function, pool_tick(function, pool)),
                        )

    thread = threading.Thread(target=ticks, name="schedule ticks", daemon=True)
    with watching(plane, f"/api/v1/nodes?labelSelector={ledger.selector}", node_seen):
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def _forget_gpu_nodes(plane: ControlPlane, published: set[str]) -> None:
    for node in published:
        call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpunodes/{node}")
    for gpu in plane.request("GET", "/apis/tensor-fusion.ai/v1/gpus")["items"]:
        if ((gpu.get("status") or {}).get("nodeSelector") or {}).get("kubernetes.io/hostname") in published:
            call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpus/{gpu['metadata']['name']}")


def play_gpupool(
    plane: ControlPlane,
    demand: list[PodDemand],
    *,
    ledger: Ledger,
    namespace: str,
    cluster: str,
    manifests: list[dict[str, Any]],
    root: Path,
    tick: float,
    schedule: dict[str, float],
    forwarded: tuple[str, ...],
    drain: float,
    seed: dict[str, Any] | None,
    settled: int,
    timeline: int,
) -> dict[str, float]:
    """One gpupool arm's run: its world, node agents and schedule, the demand played, its figures."""
    pool = manifests[0]["metadata"]["name"]
    root.mkdir(parents=True, exist_ok=True)
    invocations = threading.Lock()
    with NodeAgents(plane, pool=pool, root=root) as agents:
        try:
            with (
                gpupool_world(
                    plane,
                    root,
                    namespace=namespace,
                    cluster=cluster,
                    manifests=manifests,
                    forwarded=forwarded,
                    invocations=invocations,
                ) as world,
                gpupool_driving(
                    plane,
                    world,
                    ledger,
                    agents,
                    pool=pool,
                    tick=tick,
                    schedule=schedule,
                    invocations=invocations,
                ),
            ):
                end = play(
                    plane,
                    demand,
                    namespace=namespace,
                    ledger=ledger,
                    make_pod=lambda d: tensor_fusion_pod(d, pool),
                    drain=drain,
                    seed=seed,
                    settled=settled,
                )
            print("\n".join(ledger.timeline(timeline)) if timeline else "", flush=True)
            for failure in ledger.failures[:5]:
                print(f"failed: {failure}", flush=True)
            return ledger.figures(end)
        finally:
            _forget_gpu_nodes(plane, set(agents.started))


def run_autoselect(
    plane: ControlPlane,
    demand: list[PodDemand],
    *,
    limit: int,
    drain: float,
    tick: float,
    launch_tick: float,
    root: Path,
    timeline: int = 0,
) -> dict[str, float]:
    suffix = uuid.uuid4().hex[:4]
    namespace, name = f"as-{suffix}", f"as{suffix}"
    cluster = f"bench-{name}"
    manifests = pool_manifests(cluster, "auto", autoselect_spec(name, compaction_period_s=max(1, int(tick))))
    with namespace_with_account(plane, namespace):
        nodepool = tensor_fusion_nodepool(name, limit=limit, consolidate_after_s=CONSOLIDATE_AFTER_S)
        plane.request("POST", "/apis/karpenter.sh/v1/nodepools", nodepool)
        try:
            return play_gpupool(
                plane,
                demand,
                ledger=Ledger(limit, "karpenter.sh/nodepool", name),
                namespace=namespace,
                cluster=cluster,
                manifests=manifests,
                root=root,
                tick=tick,
                schedule={"launch": launch_tick, "compact": tick},
                forwarded=("launch",),
                drain=drain,
                seed=seed_pod(name),
                settled=0,
                timeline=timeline,
            )
        finally:
            call(plane, "DELETE", f"/apis/karpenter.sh/v1/nodepools/{name}")


def run_karpenter_mode(
    plane: ControlPlane,
    demand: list[PodDemand],
    *,
    limit: int,
    drain: float,
    tick: float,
    launch_tick: float,
    root: Path,
    warm_gpus: int,
    timeline: int = 0,
) -> dict[str, float]:
    """gpupool's Karpenter mode: its own NodeClaims (no NodePool: the pool's gpuRequirements, the
    same instance types), sized by the pool's warm reserve — `warm_gpus` T4s of free TFLOPS and
    VRAM —, idle nodes beyond it removed by compaction; the run settles once only warm's nodes are
    left (they stay, as warm asks)."""
    suffix = uuid.uuid4().hex[:4]
    namespace, name = f"km-{suffix}", f"km{suffix}"
    cluster = f"bench-{name}"
    warm = {"tflops": str(TEMPLATE_TFLOPS * warm_gpus), "vram": f"{TEMPLATE_VRAM_GIB * warm_gpus}Gi"}
    labels = {"nvidia.com/gpu.present": "true", ARM_LABEL: name}
    spec = karpenter_mode_spec(compaction_period_s=max(1, int(tick)), warm=warm, node_labels=labels)
    manifests = pool_manifests(cluster, "km", spec)
    with namespace_with_account(plane, namespace):
        try:
            return play_gpupool(
                plane,
                demand,
                ledger=Ledger(limit, ARM_LABEL, name),
                namespace=namespace,
                cluster=cluster,
                manifests=manifests,
                root=root,
                tick=tick,
                schedule={"launch": launch_tick, "bind": launch_tick, "compact": tick},
                forwarded=("launch", "bind"),
                drain=drain,
                seed=None,
                settled=warm_gpus,
                timeline=timeline,
            )
        finally:  # the claims, so gpupool's finalizer lets their NodeClaims go
            for claim in plane.request("GET", "/apis/tensor-fusion.ai/v1/gpunodeclaims")["items"]:
                if claim["metadata"].get("labels", {}).get("tensor-fusion.ai/managed-by") == f"{cluster}-km":
                    path = f"/apis/tensor-fusion.ai/v1/gpunodeclaims/{claim['metadata']['name']}"
                    call(plane, "DELETE", path)


ARMS = {"karpenter": "Karpenter alone", "autoselect": "AutoSelect", "karpenter-mode": "Karpenter mode"}


def report(demand_name: str, demand: list[PodDemand], results: dict[str, dict[str, float]]) -> None:
    floor = packing_floor(demand)
    base = results.get("karpenter")
    print(
        f"\n== {demand_name}: {len(demand)} pods (+ the seed); packing floor {floor:.4f} node-hours", end=""
    )
    print(f" ({floor / base['node_hours']:.2f} × Karpenter alone)" if base and base["node_hours"] else "")
    too_big = [d.name for d in demand if d.gpus > 1]
    if too_big:
        types = ", ".join(GPU_TYPES)
        print(f"   {len(too_big)} pod(s) ask more GPUs than any of {types} has: {', '.join(too_big)}")
    rows = (
        ("node-hours", "node_hours", "{:.4f}"),
        ("cost (USD)", "cost", "{:.4f}"),
        ("GPU-hours allocated", "gpu_hours", "{:.4f}"),
        ("pending→Running p50 (s)", "p50", "{:.1f}"),
        ("pending→Running p95 (s)", "p95", "{:.1f}"),
        ("pods never Running", "never_ran", "{:.0f}"),
        ("limit breaches (polls)", "breaches", "{:.0f}"),
        ("NodeClaims left at the end", "left", "{:.0f}"),
        ("ticks and rounds that failed", "failures", "{:.0f}"),
    )
    arms = list(results)
    print(f"{'':28}" + "".join(f"{ARMS[a]:>22}" for a in arms))
    for label, key, fmt in rows:
        cells = []
        for arm in arms:
            value = results[arm][key]
            text = fmt.format(value)
            if arm != "karpenter" and base and key in ("node_hours", "cost", "gpu_hours") and base[key]:
                text += f" ({value / base[key]:.2f}×)"
            if arm != "karpenter" and base and key == "p95" and math.isfinite(base[key]):
                text += f" ({value - base[key]:+.1f} s)"
            cells.append(f"{text:>22}")
        print(f"{label:28}" + "".join(cells))


def run_arm(
    arm: str, plane: ControlPlane, demand: list[PodDemand], *, args: argparse.Namespace, root: Path
) -> dict[str, float]:
    limit = sum(d.gpus if d.fraction == 1 else 1 for d in demand) + 1  # Karpenter alone fits
    if arm == "karpenter":
        return run_karpenter_alone(plane, demand, limit=limit, drain=args.drain, timeline=args.timeline)
    gpupool = {
        "limit": limit,
        "drain": args.drain,
        "tick": args.tick,
        "launch_tick": args.launch_tick,
        "root": root,
        "timeline": args.timeline,
    }
    if arm == "autoselect":
        return run_autoselect(plane, demand, **gpupool)
    return run_karpenter_mode(plane, demand, warm_gpus=args.warm_gpus, **gpupool)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=40)
    parser.add_argument("--demand", choices=("inference", "openb", "both"), default="both")
    parser.add_argument(
        "--arms", default="karpenter,autoselect,karpenter-mode", help=f"comma-separated, of {', '.join(ARMS)}"
    )
    parser.add_argument("--ramp", type=float, default=40.0, help="seconds over which the pods are created")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds each pod lives")
    parser.add_argument(
        "--drain", type=float, default=120.0, help="seconds to wait for the NodePool to empty"
    )
    parser.add_argument(
        "--tick",
        type=float,
        default=3.0,
        help="seconds between compaction ticks and agent rounds (nodeCompaction period, compressed)",
    )
    parser.add_argument(
        "--launch-tick",
        type=float,
        default=60.0,
        help="seconds between launch and bind schedule ticks (the template's rate(1 minute))",
    )
    parser.add_argument("--warm-gpus", type=int, default=2, help="arm (c)'s warm reserve, in T4s")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument(
        "--timeline", type=int, default=0, help="print the wait of this many slowest pods, step by step"
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep the components' logs here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}: choose from {', '.join(ARMS)}")
    demands = {
        "inference": inference_demand,
        "openb": openb_demand,
    }
    chosen = list(demands) if args.demand == "both" else [args.demand]
    with contextlib.ExitStack() as scratch:
        root = args.workdir or Path(
            scratch.enter_context(tempfile.TemporaryDirectory(prefix="karpenter-vs-"))
        )
        plane = ControlPlane(root / "plane")
        plane.start()
        try:
            ensure_kwok_node_class(plane)
            for name in chosen:
                demand = demands[name](
                    args.pods, ramp=args.ramp, hold=args.hold, rng=random.Random(args.seed)
                )
                results = {}
                for arm in arms:
                    results[arm] = run_arm(arm, plane, demand, args=args, root=root / name / arm)
                    print(f"{name}: {ARMS[arm]} {results[arm]}", flush=True)
                report(name, demand, results)
        finally:
            plane.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
