"""`gpupool catalog --cloud {aws,alibaba} [--region R] [--json]`: the bundled GPU catalog.

Role: list the instance types priced in one region (default: us-east-1 on AWS, cn-hangzhou on
Alibaba) with GPU model, GPUs, FP16 TFLOPS and VRAM per GPU, vCPU, memory, arch and USD hourly
prices (on-demand, and spot where known). Types without a price there are not listed: they are
never offered. `--json` prints an array; otherwise a table and the price sources.

Must not: hold catalog data or decide anything.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpupool.cli.errors import UserError

NAME = "catalog"
HELP = "list the GPU instance types and hourly prices gpupool plans with, for one cloud region"
DEFAULT_REGIONS = {"aws": "us-east-1", "alibaba": "cn-hangzhou"}


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cloud", required=True, choices=sorted(DEFAULT_REGIONS), help="which cloud")
    parser.add_argument(
        "--region",
        metavar="R",
        help="region for prices (default: us-east-1 on aws, cn-hangzhou on alibaba)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON array instead of a table")


def catalog_rows(cloud: str, region: str) -> list[dict[str, Any]]:
    """One JSON-ready element per instance type priced in `region`."""
    from gpupool.core.catalog import load_catalog

    catalog = load_catalog("aws" if cloud == "aws" else "alibaba")
    if catalog.region(region) is None:
        raise UserError(f"unknown {cloud} region {region!r}; known: {', '.join(catalog.region_names)}")
    rows: list[dict[str, Any]] = []
    for it in catalog.instance_types:
        prices = catalog.prices(region, it.name)
        if not prices:
            continue
        rows.append(
            {
                "instanceType": it.name,
                "gpuModel": it.gpu_model,
                "gpuCount": it.gpu_count,
                "tflopsPerGpu": float(it.tflops_per_gpu),
                "vramGiBPerGpu": it.vram_gib_per_gpu,
                "vcpu": it.vcpu,
                "memoryGiB": it.memory_gib,
                "arch": it.arch,
                "prices": {kind: float(price) for kind, price in prices.items()},
            }
        )
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    header = (
        "INSTANCE TYPE",
        "GPU",
        "GPUS",
        "TFLOPS/GPU",
        "VRAM/GPU",
        "VCPU",
        "MEM GiB",
        "ARCH",
        "ON-DEMAND",
        "SPOT",
    )
    body = [
        (
            r["instanceType"],
            r["gpuModel"],
            str(r["gpuCount"]),
            f"{r['tflopsPerGpu']:g}",
            f"{r['vramGiBPerGpu']} GiB",
            str(r["vcpu"]),
            str(r["memoryGiB"]),
            r["arch"],
            f"${r['prices']['on-demand']:.4f}/h" if "on-demand" in r["prices"] else "-",
            f"${r['prices']['spot']:.4f}/h" if "spot" in r["prices"] else "-",
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in (header, *body)
    )


def run(args: argparse.Namespace) -> int:
    from gpupool.core.catalog import load_catalog

    region = args.region or DEFAULT_REGIONS[args.cloud]
    rows = catalog_rows(args.cloud, region)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{args.cloud} {region}: {len(rows)} GPU instance types (USD per hour)")
    print(_table(rows))
    found = load_catalog("aws" if args.cloud == "aws" else "alibaba").region(region)
    if found is not None:
        print(f"\non-demand prices: {found.on_demand.source}")
        if found.spot is not None:
            print(f"spot prices: {found.spot.source}")
    return 0
