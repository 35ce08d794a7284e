"""Karpenter alone against gpupool AutoSelect, on the real control plane, for the same demand.

One real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK and
Karpenter v1.15.0 with its KWOK provider, as `gpupool sandbox build` builds them), and per demand
and arm a fresh NodePool of the same spec — TensorFusion's documented one: template labels,
`limits: nvidia.com/gpu`, `WhenEmpty` after a short `consolidateAfter`, `minValues` on the
instance type — with the same timeline: a seed pod asking one whole GPU (it gives AutoSelect its
template; both arms have it), then --pods pods created evenly over --ramp seconds, each deleted
--hold seconds after it was created, the seed with the last of them; then nothing until the
NodePool is empty or --drain seconds passed.

- (a) Karpenter alone: each pod asks whole `nvidia.com/gpu` (its fraction rounded up) of the
  default scheduler; Karpenter provisions and consolidates on its own. No gpupool code runs.
- (b) gpupool AutoSelect: each pod is a TensorFusion worker asking its fraction of a GPU's VRAM
  and TFLOPS, placed by tensor-fusion-scheduler through the relay's extender (the chart's
  configuration and RBAC); the deployed launch and compact handlers run in-process on a schedule
  tick every --tick seconds (the pool's nodeCompaction period and gpupool's 5-minute new-node
  protection compressed to --tick and 15 s); the node agent's part — GPUNode and GPU objects —
  is written for each node Karpenter registers by the agent's own Publisher over a fake NVML.
- (c) gpupool Karpenter mode: not run (see "what it leaves out").

Demands: `inference` — pods asking 1/4 to 1/2 of a GPU (seeded); `openb` — pods drawn (seeded)
from openb's pod list (Alibaba cluster-trace-gpu-v2023: /work/shared/data/openb/ if there, else
the openb-shaped sample shipped in `gpupool.simulation.traces`), GPU pods only, with their mix of
fractional (gpu_milli), whole and multi-GPU requests.

It prints, per demand and arm: node-hours and cost (each NodeClaim from its creation to its
deletion, priced at the catalog's on-demand price of the instance type it launched), GPU-hours
allocated, pending→Running p50 / p95 (pods that never ran are counted apart), how often the
NodePool's GPUs were over its limit when polled, and the NodeClaims left when the run ended —
each AutoSelect figure also as a ratio of Karpenter alone's; and the demand's packing floor: the
node-hours of one-GPU nodes holding, second by second, the ceiling of the GPUs the live pods ask.
Time is compressed (seconds stand for hours): ratios compare, absolute node-hours do not.

What it leaves out: gpupool's Karpenter mode (arm c); a real node agent; the relay's forwarding
of `pod.unschedulable` (the launch tick stands for it); more than one run per arm (the figures
move from run to run with Karpenter's and the scheduler's timing).

    .venv/bin/python -m benchmarks.karpenter_vs_gpupool [--pods 40] [--demand inference|openb|both]
                                                        [--ramp 40] [--hold 60] [--tick 3] [--seed 34]
                                                        [--workdir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from gpupool.core.catalog import load_catalog
from gpupool.core.model.constants import LABEL_CLUSTER
from gpupool.sandbox.cluster.controlplane import ControlPlane
from gpupool.sandbox.demo.clouds import create_demo_network
from gpupool.sandbox.moto_ec2 import MotoEC2
from gpupool.simulation.traces import sample_paths
from tests.real.functions_world import FunctionsWorld, run_node_agent
from tests.real.relay_process import call, chart_relay_identity
from tests.real.relay_process import relay as relay_process
from tests.real.scheduler_process import scheduler as tensor_fusion_scheduler

T = "tensor-fusion.ai/"
TYPES = ("g4dn.xlarge", "g5.xlarge", "g6.xlarge")
TEMPLATE_VRAM_GIB, TEMPLATE_TFLOPS = 16, 65  # g4dn.xlarge, the cheapest of TYPES: one T4
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


def nodepool(name: str, limit: int) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"nvidia.com/gpu.present": "true", T + "enabled": "true"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": list(TYPES),
                            "minValues": 2,
                        },
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    ],
                },
            },
            "limits": {"nvidia.com/gpu": str(limit)},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": f"{CONSOLIDATE_AFTER_S}s",
                "budgets": [{"nodes": "100%"}],
            },
        },
    }


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
    vram = f"{int(d.fraction * TEMPLATE_VRAM_GIB * 1024)}Mi"
    tflops = str(round(float(d.fraction * TEMPLATE_TFLOPS), 2))
    notes = {T + "tflops-request": tflops, T + "vram-request": vram, T + "gpupool": pool}
    if d.gpus > 1:
        notes[T + "gpu-count"] = str(d.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": d.name, "labels": {T + "enabled": "true"}, "annotations": notes},
        "spec": {
            "schedulerName": "tensor-fusion-scheduler",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/w:1",
                    "resources": {"limits": {T + "index_0": "1"}},
                }
            ],
        },
    }


@dataclass
class Ledger:
    """What the poller saw: NodeClaims' lives, pods' first Running, limit breaches."""

    limit: int
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

    def poll(self, plane: ControlPlane, namespace: str, nodepool_name: str, now: float) -> int:
        prices = load_catalog("aws")
        live = set()
        for c in plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]:
            if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") != nodepool_name:
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
        selector = f"karpenter.sh%2Fnodepool%3D{nodepool_name}"
        for node in plane.request("GET", f"/api/v1/nodes?labelSelector={selector}")["items"]:
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or []
            ):
                self.node_ready.setdefault(node["metadata"]["name"], now)
        for p in plane.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]:
            if p["spec"].get("nodeName"):
                self.bound.setdefault(p["metadata"]["name"], (now, p["spec"]["nodeName"]))
            if p["status"].get("phase") == "Running":
                self.running.setdefault(p["metadata"]["name"], now)
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
        waits = sorted(self.running[n] - self.created[n] for n in self.created if n in self.running)
        return {
            "node_hours": sum(lives.values()) / 3600,
            "cost": sum(lives[n] / 3600 * self.price.get(n, 0) for n in lives),
            "gpu_hours": sum(lives[n] / 3600 * self.gpus.get(n, 1) for n in lives),
            "p50": statistics.median(waits) if waits else math.inf,
            "p95": waits[min(len(waits) - 1, math.ceil(0.95 * len(waits)) - 1)] if waits else math.inf,
            "never_ran": len([n for n in self.created if n not in self.running and n != "seed"]),
            "breaches": self.breaches,
            "left": len([n for n in self.born if n not in self.died]),
        }


def play(
    plane: ControlPlane,
    demand: list[PodDemand],
    *,
    namespace: str,
    nodepool_name: str,
    ledger: Ledger,
    make_pod: Callable[[PodDemand], dict[str, Any]],
    drain: float,
    every_second: Callable[[float], None] = lambda _: None,
) -> float:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    start = time.monotonic()
    seed = {
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
    plane.request("POST", pods, seed)
    ledger.created["seed"] = 0.0
    while "seed" not in ledger.running and time.monotonic() - start < 180:  # the template, for both arms
        ledger.poll(plane, namespace, nodepool_name, time.monotonic() - start)
        every_second(time.monotonic() - start)
        time.sleep(1)
    offset = time.monotonic() - start
    todo = sorted(demand, key=lambda d: d.start)
    ends = sorted(demand, key=lambda d: d.end)
    last_end = offset + ends[-1].end
    while True:
        now = time.monotonic() - start
        while todo and offset + todo[0].start <= now:
            d = todo.pop(0)
            plane.request("POST", pods, make_pod(d))
            ledger.created[d.name] = now
        while ends and offset + ends[0].end <= now:
            call(plane, "DELETE", f"{pods}/{ends.pop(0).name}")
        if not ends and "seed" in ledger.created:
            call(plane, "DELETE", f"{pods}/seed")
        live = ledger.poll(plane, namespace, nodepool_name, now)
        every_second(now)
        if not ends and (live == 0 or now > last_end + drain):
            return now
        time.sleep(1)


def run_karpenter_alone(
    plane: ControlPlane, demand: list[PodDemand], *, limit: int, drain: float, timeline: int = 0
) -> dict[str, float]:
    suffix = uuid.uuid4().hex[:4]
    namespace, name = f"ka-{suffix}", f"ka{suffix}"
    ledger = Ledger(limit)
    plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    plane.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": namespace},
        },
        path=f"/api/v1/namespaces/{namespace}/serviceaccounts/default",
    )
    plane.request("POST", "/apis/karpenter.sh/v1/nodepools", nodepool(name, limit))
    try:
        end = play(
            plane,
            demand,
            namespace=namespace,
            nodepool_name=name,
            ledger=ledger,
            make_pod=lambda d: whole_gpu_pod(d, name),
            drain=drain,
        )
        print("\n".join(ledger.timeline(timeline)) if timeline else "", flush=True)
        return ledger.figures(end)
    finally:
        call(plane, "DELETE", f"/apis/karpenter.sh/v1/nodepools/{name}")
        call(plane, "DELETE", f"/api/v1/namespaces/{namespace}")


class CompressedWorld(FunctionsWorld):
    """The functions with gpupool's 5-minute new-node protection compressed to 15 s."""

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, "GPUPOOL_NEW_NODE_PROTECTION": "15s"}


@contextlib.contextmanager
def autoselect_world(
    plane: ControlPlane, root: Path, *, namespace: str, nodepool_name: str, tick: float
) -> Iterator[tuple[CompressedWorld, str]]:
    cluster = f"bench-{nodepool_name}"
    pool = f"{cluster}-auto"
    spec = {
        "nodeManagerConfig": {
            "provisioningMode": "AutoSelect",
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "In", "values": [nodepool_name]}
                        ]
                    }
                ]
            },
            "nodeCompaction": {"period": f"{max(1, int(tick))}s"},
        }
    }
    manifests: dict[str, dict[str, Any]] = {
        "gpupools": {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "metadata": {"name": pool, "labels": {LABEL_CLUSTER: cluster}},
            "spec": spec,
        },
        "tensorfusionclusters": {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "TensorFusionCluster",
            "metadata": {"name": cluster},
            "spec": {
                "computingVendor": {
                    "name": "aws",
                    "type": "aws",
                    "authType": "serviceAccountRole",
                    "enable": True,
                    "params": {"defaultRegion": "us-east-1"},
                },
                "gpuPools": [{"name": "auto", "specTemplate": spec}],
            },
        },
    }
    with contextlib.ExitStack() as stack, MotoEC2() as moto:
        for plural, manifest in manifests.items():
            plane.apply(manifest, path=f"/apis/tensor-fusion.ai/v1/{plural}/{manifest['metadata']['name']}")
            stack.callback(
                call, plane, "DELETE", f"/apis/tensor-fusion.ai/v1/{plural}/{manifest['metadata']['name']}"
            )
        world = CompressedWorld(plane, moto.url, cluster)
        create_demo_network(world.ec2())
        identities = stack.enter_context(chart_relay_identity(plane, root, namespace=namespace))
        relay = stack.enter_context(
            relay_process(root=root, kubeconfig=identities.relay, args=["--lease-namespace", namespace])
        )
        stack.enter_context(
            tensor_fusion_scheduler(
                root=root,
                kubeconfig=identities.kube_scheduler,
                namespace=namespace,
                extender_port=relay.extender_port,
            )
        )
        yield world, pool


def run_autoselect(
    plane: ControlPlane,
    demand: list[PodDemand],
    *,
    limit: int,
    drain: float,
    tick: float,
    root: Path,
    timeline: int = 0,
) -> dict[str, float]:
    suffix = uuid.uuid4().hex[:4]
    namespace, name = f"as-{suffix}", f"as{suffix}"
    ledger = Ledger(limit)
    plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    plane.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": namespace},
        },
        path=f"/api/v1/namespaces/{namespace}/serviceaccounts/default",
    )
    plane.request("POST", "/apis/karpenter.sh/v1/nodepools", nodepool(name, limit))
    published: set[str] = set()
    root.mkdir(parents=True, exist_ok=True)
    try:
        with autoselect_world(plane, root, namespace=namespace, nodepool_name=name, tick=tick) as (
            world,
            pool,
        ):
            last_tick = [-math.inf]

            def drive(now: float) -> None:
                selector = f"karpenter.sh%2Fnodepool%3D{name}"
                for node in plane.request("GET", f"/api/v1/nodes?labelSelector={selector}")["items"]:
                    node_name = node["metadata"]["name"]
                    taints = {t["key"] for t in node["spec"].get("taints") or []}
                    ready = any(
                        c["type"] == "Ready" and c["status"] == "True"
                        for c in node["status"].get("conditions") or []
                    )
                    if node_name not in published and ready and "karpenter.sh/unregistered" not in taints:
                        run_node_agent(plane, node, pool=pool, nvml_file=root / f"{node_name}.json")
                        published.add(node_name)
                        ledger.gpus_published[node_name] = now
                if now - last_tick[0] >= tick:
                    last_tick[0] = now
                    for function in ("launch", "compact"):
                        world.invoke(function, schedule_event(function, pool))

            end = play(
                plane,
                demand,
                namespace=namespace,
                nodepool_name=name,
                ledger=ledger,
                make_pod=lambda d: tensor_fusion_pod(d, pool),
                drain=drain,
                every_second=drive,
            )
            print("\n".join(ledger.timeline(timeline)) if timeline else "", flush=True)
            return ledger.figures(end)
    finally:
        call(plane, "DELETE", f"/apis/karpenter.sh/v1/nodepools/{name}")
        call(plane, "DELETE", f"/api/v1/namespaces/{namespace}")
        for node in published:
            call(plane, "DELETE", f"/apis/tensor-fusion.ai/v1/gpunodes/{node}")


def schedule_event(function: str, pool: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": f"bench-{uuid.uuid4().hex[:8]}",
        "detail-type": "Scheduled Event",
        "source": "aws.scheduler",
        "account": "123456789012",
        "time": "2026-12-07T16:00:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:scheduler:us-east-1:123456789012:schedule/default/{function}"],
        "detail": {"pool": pool},
    }


def report(demand_name: str, demand: list[PodDemand], results: dict[str, dict[str, float]]) -> None:
    floor = packing_floor(demand)
    base = results.get("karpenter")
    print(
        f"\n== {demand_name}: {len(demand)} pods (+ the seed); packing floor {floor:.4f} node-hours", end=""
    )
    print(f" ({floor / base['node_hours']:.2f} × Karpenter alone)" if base and base["node_hours"] else "")
    rows = (
        ("node-hours", "node_hours", "{:.4f}"),
        ("cost (USD)", "cost", "{:.4f}"),
        ("GPU-hours allocated", "gpu_hours", "{:.4f}"),
        ("pending→Running p50 (s)", "p50", "{:.1f}"),
        ("pending→Running p95 (s)", "p95", "{:.1f}"),
        ("pods never Running", "never_ran", "{:.0f}"),
        ("limit breaches (polls)", "breaches", "{:.0f}"),
        ("NodeClaims left at the end", "left", "{:.0f}"),
    )
    arms = list(results)
    print(f"{'':28}" + "".join(f"{a:>22}" for a in arms))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=40)
    parser.add_argument("--demand", choices=("inference", "openb", "both"), default="both")
    parser.add_argument("--ramp", type=float, default=40.0, help="seconds over which the pods are created")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds each pod lives")
    parser.add_argument(
        "--drain", type=float, default=120.0, help="seconds to wait for the NodePool to empty"
    )
    parser.add_argument("--tick", type=float, default=3.0, help="seconds between gpupool's schedule ticks")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument(
        "--timeline", type=int, default=0, help="print the wait of this many slowest pods, step by step"
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep the components' logs here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
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
            plane.apply(
                {
                    "apiVersion": "karpenter.kwok.sh/v1alpha1",
                    "kind": "KWOKNodeClass",
                    "metadata": {"name": "default"},
                },
                path="/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses/default",
            )
            for name in chosen:
                demand = demands[name](
                    args.pods, ramp=args.ramp, hold=args.hold, rng=random.Random(args.seed)
                )
                limit = sum(d.gpus if d.fraction == 1 else 1 for d in demand) + 1  # Karpenter alone fits
                results = {
                    "karpenter": run_karpenter_alone(
                        plane, demand, limit=limit, drain=args.drain, timeline=args.timeline
                    )
                }
                print(f"{name}: Karpenter alone {results['karpenter']}", flush=True)
                results["autoselect"] = run_autoselect(
                    plane,
                    demand,
                    limit=limit,
                    drain=args.drain,
                    tick=args.tick,
                    root=root / name,
                    timeline=args.timeline,
                )
                print(f"{name}: AutoSelect {results['autoselect']}", flush=True)
                report(name, demand, results)
        finally:
            plane.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
