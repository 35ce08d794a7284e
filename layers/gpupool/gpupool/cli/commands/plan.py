"""`gpupool plan --pool FILE [...]`: the nodes gpupool would add to a pool, and what they cost.

Role: read a GPUPool or TensorFusionCluster manifest (and optionally a `--state` file listing the
pool's existing GPUNode / GPUNodeClaim objects, as a YAML list or multi-document YAML; objects
labelled for another pool — `tensor-fusion.ai/gpupool` on GPUNodes, `tensor-fusion.ai/managed-by`
on claims — are skipped, unlabelled ones count), compute the
capacity gap and the cheapest mix of catalog offerings the pool's gpuRequirements allow, and print
it (a table, or with `--json` an object: gap {tflops, vramGiB}, nodes [{instanceType, zone,
capacityType, count, hourlyPrice}], hourlyCost, reasons). Cloud: `--cloud`, else the cluster's
computingVendor.type (karpenter counts as aws), else aws. Region: `--region`, else
computingVendor.params.defaultRegion, else us-east-1 (aws) / cn-hangzhou (alibaba).

Must not: decide anything itself (the core does) or touch a cloud.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpupool.cli.commands.catalog import DEFAULT_REGIONS
from gpupool.cli.errors import UserError
from gpupool.cli.files import read_text

if TYPE_CHECKING:
    from gpupool.core.model.cluster import ComputingVendor
    from gpupool.core.model.pool import GPUPoolSpec
    from gpupool.core.selection_pool import CapacityPlan

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
        help="the pool's GPUNode / GPUNodeClaim objects (YAML list or documents)",
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
    name: str
    spec: GPUPoolSpec
    vendor: ComputingVendor | None


def _pools(path: Path) -> list[_Pool]:
    from gpupool.core.model.cluster import TensorFusionCluster
    from gpupool.core.model.pool import GPUPool

    found: list[_Pool] = []
    for document in _documents(path):
        obj = _parse(path, document)
        if isinstance(obj, GPUPool):
            found.append(_Pool(obj.name, obj.spec, None))
        elif isinstance(obj, TensorFusionCluster):
            vendor = obj.spec.computing_vendor
            found.extend(_Pool(p.name, p.spec_template, vendor) for p in obj.spec.gpu_pools)
    return found


def _choose(path: Path, pools: list[_Pool], name: str | None) -> _Pool:
    names = ", ".join(p.name for p in pools)
    if not pools:
        raise UserError(f"{path}: no GPUPool or TensorFusionCluster gpuPools entry found")
    if name is not None:
        chosen = [p for p in pools if p.name == name]
        if not chosen:
            raise UserError(f"{path}: no pool named {name!r} (found: {names})")
        return chosen[0]
    if len(pools) > 1:
        raise UserError(f"{path}: several pools ({names}); choose one with --pool-name")
    return pools[0]


def _state(path: Path | None, pool: str) -> tuple[list[Any], list[Any]]:
    from gpupool.core.model.node import GPUNode
    from gpupool.core.model.nodeclaim import GPUNodeClaim

    if path is None:
        return [], []
    nodes: list[Any] = []
    claims: list[Any] = []
    for document in _documents(path):
        if not isinstance(document, Mapping):
            raise UserError(f"{path}: each state entry must be a GPUNode or GPUNodeClaim object")
        obj = _parse(path, document)
        labels = obj.metadata.labels
        if isinstance(obj, GPUNode):
            if labels.get("tensor-fusion.ai/gpupool", pool) == pool:
                nodes.append(obj)
        elif isinstance(obj, GPUNodeClaim):
            if labels.get("tensor-fusion.ai/managed-by", pool) == pool:
                claims.append(obj)
        else:
            raise UserError(
                f"{path}: unsupported kind {obj.KIND} in state (expected GPUNode or GPUNodeClaim)"
            )
    return nodes, claims


def _cloud_and_region(args: argparse.Namespace, vendor: ComputingVendor | None) -> tuple[str, str]:
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
    from gpupool.core.capacity import gap_from_config, pool_capacity_from_state
    from gpupool.core.catalog import load_catalog
    from gpupool.core.requirements import RequirementError
    from gpupool.core.selection_pool import plan_pool_capacity

    pool = _choose(args.pool, _pools(args.pool), args.pool_name)
    nodes, claims = _state(args.state, pool.name)
    cloud, region = _cloud_and_region(args, pool.vendor)
    catalog = load_catalog("alibaba" if cloud == "alibaba" else "aws")
    if catalog.region(region) is None:
        raise UserError(
            f"region {region!r} is not in the {cloud} catalog ({', '.join(catalog.region_names)})"
        )
    if args.max_nodes < 1:
        raise UserError("--max-nodes must be at least 1")
    gap = gap_from_config(pool.spec.capacity_config, pool_capacity_from_state(nodes, claims))
    provisioner = pool.spec.node_manager_config.node_provisioner
    requirements = provisioner.gpu_requirements if provisioner is not None else []
    _quiet_highs()
    try:
        plan = plan_pool_capacity(
            gap, catalog, region=region, requirements=requirements, max_nodes=args.max_nodes
        )
    except RequirementError as exc:
        raise UserError(f"{args.pool}: pool {pool.name}: gpuRequirements: {exc}") from None
    return plan, cloud, region


def plan_json(plan: CapacityPlan) -> dict[str, Any]:
    return {
        "gap": {"tflops": float(plan.gap.need.tflops), "vramGiB": float(plan.gap.need.vram / _GIB)},
        "nodes": [
            {
                "instanceType": n.instance_type.name,
                "zone": n.zone,
                "capacityType": n.capacity_type,
                "count": n.count,
                "hourlyPrice": float(n.hourly_price),
            }
            for n in plan.nodes
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
            str(n.count),
            n.instance_type.name,
            f"{n.instance_type.gpu_count}x {n.instance_type.gpu_model}",
            n.capacity_type,
            n.zone or "any",
            f"${n.hourly_price:.4f}/h",
            f"${n.hourly_price * n.count:.4f}/h",
        )
        for n in plan.nodes
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
