"""`gpupool plan --pool FILE [...]`: the nodes gpupool would add to a pool, and what they cost.

Role: read a GPUPool or TensorFusionCluster manifest (a cluster's gpuPools entry becomes the
GPUPool `<cluster>-<entry>` the launch function syncs, through the same `plan_pool_sync`) and
optionally a `--state` file of the pool's existing objects (GPUNodeClaim, GPUNode and Node; a
YAML list or multi-document YAML). The state is cut into a `PoolSnapshot` by the core's one
membership rule (`planning.membership`: claims by `tensor-fusion.ai/managed-by`, nodes by the
claim they were provisioned for or the pool label); a GPUNode listed without a Node of its name
stands for the Node TensorFusion keeps beside it (same name, its labels, Ready). Then the core's
one pipeline, `planning.capacity_plan.plan_capacity` — the launch function's own — plans it,
and this prints it (a table, or with `--json` an object: gap {tflops, vramGiB}, nodes
[{instanceType, zone, capacityType, count, hourlyPrice}], hourlyCost, reasons). Cloud:
`--cloud`, else the cluster's computingVendor.type (karpenter counts as aws), else aws. Region:
`--region`, else computingVendor.params.defaultRegion, else us-east-1 / cn-hangzhou.

Must not: decide anything itself (the core does) or touch a cloud.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpupool.cli.commands.catalog import DEFAULT_REGIONS
from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text

if TYPE_CHECKING:
    from gpupool.core.catalog import Cloud
    from gpupool.core.model.cluster import ComputingVendor
    from gpupool.core.model.pool import GPUPool
    from gpupool.core.planning.capacity_plan import CapacityPlan
    from gpupool.core.planning.plan import OfferingRef
    from gpupool.core.planning.snapshot import PoolSnapshot

NAME = "plan"
HELP = "show the cheapest mix of nodes that closes a pool's capacity gap (exact, never past maxResources)"
_GIB = 2**30


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pool", required=True, type=Path, metavar="FILE", help="GPUPool or TensorFusionCluster YAML"
    )
    parser.add_argument("--pool-name", metavar="N", help="which pool, when FILE declares several")
    parser.add_argument(
        "--cloud",
        choices=sorted(DEFAULT_REGIONS),
        help="catalog to plan with (default: computingVendor.type in FILE, else aws)",
    )
    parser.add_argument(
        "--region",
        metavar="R",
        help="region (default: defaultRegion in FILE, else us-east-1 on aws, cn-hangzhou on alibaba)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="the pool's GPUNodeClaim, GPUNode and Node objects (YAML list or documents)",
    )
    parser.add_argument(
        "--max-nodes", type=int, default=100, metavar="N", help="most nodes in one plan (default 100)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of a table")


def _documents(path: Path) -> list[Any]:
    from gpupool.core.model.registry import ManifestError, load_documents

    try:
        documents = load_documents(read_text(path))
    except ManifestError as exc:
        raise UserError(f"{path}: {exc.errors[0].reason}") from None
    flat: list[Any] = []
    for document in documents:  # a YAML list of objects counts like several documents
        flat.extend(document if isinstance(document, list) else [document])
    return flat


def _parse(path: Path, document: Any) -> Any:
    from gpupool.core.model.registry import ManifestError, parse_manifest

    try:
        return parse_manifest(document)
    except ManifestError as exc:
        first = exc.errors[0]
        where = f" {first.path}:" if first.path else ""
        raise UserError(f"{path}: {exc.what}:{where} {first.reason}") from None


@dataclass(frozen=True)
class _Pool:
    name: str  # as the user names it: the GPUPool's name, or the gpuPools entry's
    pool: GPUPool  # as the cluster holds it (a cluster's entry: `<cluster>-<entry>`)
    vendor: ComputingVendor | None


def _pools(path: Path) -> list[_Pool]:
    from gpupool.core.decisions.pool_sync import plan_pool_sync
    from gpupool.core.model.cluster import TensorFusionCluster
    from gpupool.core.model.pool import GPUPool
    from gpupool.core.planning.plan import ApplyPool

    found: list[_Pool] = []
    for document in _documents(path):
        obj = _parse(path, document)
        if isinstance(obj, GPUPool):
            found.append(_Pool(obj.name, obj, None))
        elif isinstance(obj, TensorFusionCluster):
            synced = [a.desired for a in plan_pool_sync([obj], []).actions if isinstance(a, ApplyPool)]
            for entry, pool in zip(obj.spec.gpu_pools, synced, strict=True):
                found.append(_Pool(entry.name, pool, obj.spec.computing_vendor))
    return found


def _choose(path: Path, pools: list[_Pool], name: str | None) -> _Pool:
    names = ", ".join(p.name for p in pools)
    if not pools:
        raise UserError(f"{path}: no GPUPool or TensorFusionCluster gpuPools entry found")
    if name is not None:
        chosen = [p for p in pools if name in (p.name, p.pool.name)]
        if not chosen:
            raise UserError(f"{path}: no pool named {name!r} (found: {names})")
        return chosen[0]
    if len(pools) > 1:
        raise UserError(f"{path}: several pools ({names}); choose one with --pool-name")
    return pools[0]


def _state(path: Path | None, pool: GPUPool) -> PoolSnapshot:
    """The pool's snapshot cut from the state file's objects by the core's membership rule."""
    from gpupool.core.model.base import Condition
    from gpupool.core.model.constants import LABEL_CLUSTER
    from gpupool.core.model.foreign import Node, NodeStatus
    from gpupool.core.model.node import GPUNode
    from gpupool.core.model.nodeclaim import GPUNodeClaim
    from gpupool.core.planning.membership import ClusterObjects, pool_snapshot

    nodes: list[Node] = []
    gpu_nodes: list[GPUNode] = []
    claims: list[GPUNodeClaim] = []
    for document in _documents(path) if path is not None else []:
        if not isinstance(document, Mapping):
            raise UserError(f"{path}: each state entry must be a GPUNodeClaim, GPUNode or Node object")
        obj = _parse(path or Path(), document)
        if isinstance(obj, GPUNode):
            gpu_nodes.append(obj)
        elif isinstance(obj, GPUNodeClaim):
            claims.append(obj)
        elif isinstance(obj, Node):
            nodes.append(obj)
        else:
            raise UserError(
                f"{path}: unsupported kind {obj.KIND} in state (expected GPUNodeClaim, GPUNode or Node)"
            )
    listed = {n.name for n in nodes}
    ready = NodeStatus(conditions=[Condition(type="Ready", status="True")])
    for gpu_node in gpu_nodes:
        if gpu_node.name not in listed:
            metadata = gpu_node.metadata.model_copy(update={"annotations": {}, "owner_references": []})
            nodes.append(Node(metadata=metadata, status=ready))
    objects = ClusterObjects(claims=claims, nodes=nodes, gpu_nodes=gpu_nodes)
    return pool_snapshot(pool.metadata.labels.get(LABEL_CLUSTER, ""), pool, objects)


def cloud_and_region(args: argparse.Namespace, vendor: ComputingVendor | None) -> tuple[str, str]:
    """The catalog and region a cluster's pools are planned in (`--cloud`/`--region` first)."""
    cloud = args.cloud
    if cloud is None:
        cloud = "alibaba" if vendor is not None and vendor.type == "alibaba" else "aws"
    region = args.region or (vendor.params.default_region if vendor is not None else None)
    return cloud, region or DEFAULT_REGIONS[cloud]


def _quiet_highs() -> None:
    """HiGHS prints a banner on stdout the first time a solver is built; build one silently."""
    from importlib.util import find_spec

    if find_spec("highspy") is None:
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            import highspy

            highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def plan_from_files(args: argparse.Namespace) -> tuple[CapacityPlan, str, str]:
    """The launch function's plan for the pool and state files: same snapshot, same pipeline."""
    from datetime import UTC, datetime

    from gpupool.core.catalog import load_catalog
    from gpupool.core.planning.capacity_plan import plan_capacity
    from gpupool.core.planning.offerings import catalog_offerings
    from gpupool.core.planning.requirements import RequirementError

    chosen = _choose(args.pool, _pools(args.pool), args.pool_name)
    snapshot = _state(args.state, chosen.pool)
    cloud, region = cloud_and_region(args, chosen.vendor)
    catalog_cloud: Cloud = "alibaba" if cloud == "alibaba" else "aws"
    catalog = load_catalog(catalog_cloud)
    if catalog.region(region) is None:
        raise UserError(
            f"region {region!r} is not in the {cloud} catalog ({', '.join(catalog.region_names)})"
        )
    if args.max_nodes < 1:
        raise UserError("--max-nodes must be at least 1")
    _quiet_highs()
    try:
        plan = plan_capacity(
            snapshot,
            catalog_offerings(catalog_cloud, region),
            now=datetime.now(UTC),
            max_nodes=args.max_nodes,
        )
    except RequirementError as exc:
        raise UserError(f"{args.pool}: pool {chosen.name}: gpuRequirements: {exc}") from None
    return plan, cloud, region


def _grouped(plan: CapacityPlan) -> list[tuple[OfferingRef, int]]:
    """The plan's nodes as (offering, count), in order of first appearance."""
    counts: dict[str, list[Any]] = {}
    for offering in plan.offerings:
        counts.setdefault(offering.key, [offering, 0])[1] += 1
    return [(offering, count) for offering, count in counts.values()]


def plan_json(plan: CapacityPlan) -> dict[str, Any]:
    return {
        "gap": {"tflops": float(plan.gap.need.tflops), "vramGiB": float(plan.gap.need.vram / _GIB)},
        "nodes": [
            {
                "instanceType": offering.instance_type,
                "zone": offering.zone,
                "capacityType": offering.capacity_type,
                "count": count,
                "hourlyPrice": float(offering.hourly_price),
            }
            for offering, count in _grouped(plan)
        ],
        "hourlyCost": round(float(plan.hourly_cost), 6),
        "reasons": list(plan.reasons),
    }


def plan_table(plan: CapacityPlan, *, title: str) -> str:
    data = plan_json(plan)
    lines = [title, f"gap: {data['gap']['tflops']:g} TFLOPS, {data['gap']['vramGiB']:g} GiB VRAM"]
    header = ("COUNT", "INSTANCE TYPE", "GPUS", "CAPACITY", "ZONE", "PRICE", "SUBTOTAL")
    body = [
        (
            str(count),
            offering.instance_type,
            f"{offering.gpu_count}x {offering.labels.get('tensor-fusion.ai/gpu-model', '?')}",
            offering.capacity_type,
            offering.zone or "any",
            f"${Decimal(offering.hourly_price):.4f}/h",
            f"${Decimal(offering.hourly_price) * count:.4f}/h",
        )
        for offering, count in _grouped(plan)
    ]
    if body:
        widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in (header, *body)
        ]
    lines.append(f"hourly cost: ${data['hourlyCost']:.4f}")
    lines += [f"- {reason}" for reason in plan.reasons]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    plan, cloud, region = plan_from_files(args)
    if args.json:
        print(json.dumps(plan_json(plan), indent=2))
    else:
        print(plan_table(plan, title=f"plan for {args.pool} ({cloud} {region})"))
    return 0
